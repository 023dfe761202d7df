"""What counts as "the storage service did not answer", for both sides: intake refuses with 503,
scoring retries the instance (never a result's zero). One home, so the two agree."""

from botocore.exceptions import BotoCoreError, ClientError

# OSError covers the filesystem backend; botocore's errors (connection refused, timeouts, 5xx after
# its own retries) are not OSErrors.
STORAGE_ERRORS: tuple[type[Exception], ...] = (OSError, BotoCoreError, ClientError)
