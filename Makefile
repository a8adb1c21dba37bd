.PHONY: run test
# The README's two commands.

run:  ## Run the site with demo data on http://localhost:8000 (no Docker, nothing to install).
	./scripts/run-demo

test:  ## Lint, Django checks and the whole test suite against real PostgreSQL and Redis.
	./scripts/test $(ARGS)
