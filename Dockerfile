# One image for web, workers and beat; docker-compose.yml picks the command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings.prod

WORKDIR /app
COPY pyproject.toml README.md ./
COPY config ./config
COPY raters ./raters
COPY tournaments ./tournaments
COPY leaderboard ./leaderboard
RUN pip install --no-cache-dir .
COPY . .
# Production settings refuse short or example secrets, so collectstatic gets throwaway random ones.
RUN DJANGO_SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    PANEL_ID_HMAC_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    DATABASE_URL=sqlite:////tmp/unused.db python manage.py collectstatic --noinput \
 && useradd --system --uid 1000 populus && mkdir -p var && chown populus var
USER populus
EXPOSE 8000
