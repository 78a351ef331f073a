"""Static files of the production profile: WhiteNoise's compressed, hashed copies (see settings.py)."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed names once `collectstatic` ran; before that, the plain names (served from the finders) instead
    of an error on every page."""

    manifest_strict = False
