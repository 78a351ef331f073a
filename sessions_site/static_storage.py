"""Static files of the production profile: WhiteNoise's compressed, hashed copies (see settings.py)."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed names once `collectstatic` ran; before that, the plain names (served from the finders) instead
    of an error on every page."""

    manifest_strict = False

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            # Not in the manifest and not in STATIC_ROOT (no `collectstatic` yet): WhiteNoise's finders serve
            # the file under its own name.
            return name
