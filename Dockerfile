# The image docker-compose.yml builds for the web and worker services.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings.production
WORKDIR /app
# Production packages only: pytest, ruff, mypy and playwright are in requirements/dev.txt.
COPY requirements/lock.txt requirements/lock.txt
RUN pip install --no-cache-dir -r requirements/lock.txt
COPY . .
# collectstatic needs settings that import; the real secrets come from the environment at run time.
RUN SECRET_KEY=build-only ALLOWED_HOSTS=build.invalid python manage.py collectstatic --noinput
RUN useradd --system --uid 1000 preregistry && mkdir -p /app/var/signer-state && chown -R preregistry /app/var
USER preregistry
EXPOSE 8000
