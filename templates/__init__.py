"""The report's Jinja2 template and stylesheet, read by :mod:`reports.render` through ``importlib.resources``."""
