"""scoreaudit: declarative, pre-registered audits of image aesthetic and preference scorers."""


def version() -> str:
    """The installed package's version ("0+unknown" when run from a source tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    try:
        return _dist_version("scoreaudit")
    except PackageNotFoundError:
        return "0+unknown"
