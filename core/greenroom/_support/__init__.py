"""Private support code: lazy exports, memos, on-disk caches, safe files, redaction,
globs, bounded arguments."""
