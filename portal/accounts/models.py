import uuid
from typing import ClassVar

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.db import models
from django.utils import timezone

# Maintainers are the members of this group (user_make_maintainer).
MAINTAINERS_GROUP = "maintainers"


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def _create(self, email: str, password: str | None, **extra: object) -> "User":
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: object) -> "User":
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: object) -> "User":
        extra.update(is_staff=True, is_superuser=True)
        return self._create(email, password, **extra)


class User(AbstractUser):
    """An account, identified by its email address; the public id is a UUID."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    username = None  # type: ignore[assignment]
    email = models.EmailField("email address", unique=True)
    display_name = models.CharField(max_length=120, blank=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    # Our manager creates users by e-mail; AbstractUser's stub expects its username-based manager.
    objects: ClassVar[UserManager] = UserManager()  # type: ignore[assignment]

    def __str__(self) -> str:
        return self.email

    @property
    def shown_name(self) -> str:
        return self.display_name or self.email


class CliToken(models.Model):
    """A personal access token for the CLI. Only its SHA-256 is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="cli_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="First characters, shown so users can match tokens.")
    token_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=40, default="submit")
    client_name = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())


class DeviceAuthorization(models.Model):
    """One RFC 8628 device-code grant, from request to redemption."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        REDEEMED = "redeemed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    device_code_hash = models.CharField(max_length=64, unique=True)
    user_code = models.CharField(max_length=9, db_index=True)
    client_name = models.CharField(max_length=80)
    scope = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.CASCADE)
    token = models.ForeignKey(CliToken, null=True, blank=True, on_delete=models.SET_NULL)
    interval = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_polled_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user_code"],
                condition=models.Q(status="pending"),
                name="one_pending_grant_per_user_code",
            )
        ]

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()
