import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.prod")

application = get_wsgi_application()

# Import the URL configuration and every view module while the worker starts, not in the first request
# it serves: about half a second of imports that the first visitor after a deploy (or after each worker
# restart) would otherwise wait for.
get_resolver().url_patterns  # noqa: B018 (evaluated for its imports)
