"""Run one of Dify's api programs (`flask`, `gunicorn` or `celery`, then its arguments) under Dify's own venv.

Dify pins a git fork of flask-restx that cannot be fetched here; PyPI's flask-restx 1.3.2 works except that three
`Swagger` methods Dify's `libs/flask_restx_compat.py` wraps at start-up do not exist there. They are only called
when the OpenAPI document is generated (never in these tests), so they are added here as methods that say so
when called. Nothing else is changed. Usage (cwd = Dify's `api/`): `python dify_boot.py gunicorn ARGS...`.
"""

import importlib.abc
import importlib.util
import sys

MISSING_IN_PYPI_FLASK_RESTX = (
    "schema_from_parameter",
    "parameters_and_request_body_for",
    "request_body_from_form_params",
)


def _not_in_pypi(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"Swagger.{name} exists only in Dify's flask-restx fork (OpenAPI generation)")

    method.__name__ = name
    return method


def add_missing_methods(module) -> None:
    for name in MISSING_IN_PYPI_FLASK_RESTX:
        if not hasattr(module.Swagger, name):
            setattr(module.Swagger, name, _not_in_pypi(name))


class _AfterSwaggerImport(importlib.abc.MetaPathFinder):
    """Adds the methods right after `flask_restx.swagger` is first imported (not before: gunicorn's gevent worker
    must monkey-patch the standard library before Dify's modules are imported)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "flask_restx.swagger":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            add_missing_methods(module)

        loader.exec_module = exec_module
        return spec


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("flask", "gunicorn", "celery"):
        print("usage: dify_boot.py flask|gunicorn|celery ARGS...", file=sys.stderr)
        return 2
    sys.meta_path.insert(0, _AfterSwaggerImport())
    program, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    sys.path.insert(0, ".")
    if program == "gunicorn":
        from gunicorn.app.wsgiapp import run

        return run()
    if program == "celery":
        from celery.__main__ import main as celery_main

        return celery_main()
    from flask.cli import main as flask_main

    return flask_main()


if __name__ == "__main__":
    sys.exit(main())
