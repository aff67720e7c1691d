# Stands for the pgAdmin image's /pgadmin4/gunicorn_config.py (not part of the PyPI package):
# the image's file only sets gunicorn's server header and, with JSON_LOGGER, a JSON log format;
# neither changes what the tests look at.
import gunicorn

gunicorn.SERVER_SOFTWARE = "Python"
