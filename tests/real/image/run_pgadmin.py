# Stands for the pgAdmin image's /pgadmin4/run_pgadmin.py (not part of the PyPI package): the
# image imports the application in server mode, once before gunicorn to create the settings
# schema and the initial user, then as gunicorn's application.
import builtins

builtins.SERVER_MODE = True

from pgAdmin4 import app  # noqa: E402,F401
