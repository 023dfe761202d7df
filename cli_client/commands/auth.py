"""`asibench login`, `logout` and `auth status`."""

import time
from typing import Any

import click

from cli_client.context import CliContext, pass_cli
from cli_client.errors import CliError, PortalHttpError
from cli_client.remote.endpoints import ENDPOINT_HELP, token_settings_url


def who(user: dict[str, Any]) -> str:
    return str(user.get("primary_email") or user.get("email") or user.get("display_name") or user.get("id") or "?")


def validate_token(cli_ctx: CliContext, api_base: str, token: str) -> dict[str, Any]:
    """Ask the Portal who owns this token; raise CliError with the reason if it is refused."""
    if not token.startswith("asi_pat_") or len(token) < 20:
        raise CliError("The pasted value is not a complete ASI-Bench token (expected asi_pat_...).")
    try:
        user = cli_ctx.json("GET", f"{api_base}/me", token=token, timeout=30)
    except PortalHttpError as exc:
        if exc.status in (401, 403):
            raise CliError(f"Portal rejected this token: {exc.detail}") from exc
        raise CliError(f"Portal token check failed (HTTP {exc.status}).") from exc
    if not user.get("id"):
        raise CliError("Portal returned an invalid account response.")
    return user


def device_login(cli_ctx: CliContext, api_base: str) -> tuple[str, dict[str, Any]]:
    grant = cli_ctx.json(
        "POST", f"{api_base}/cli/device-code", json={"client_name": "asibench-cli", "scope": "submit"}, timeout=30
    )
    if not grant.get("device_code"):
        raise CliError("Could not start a login: the Portal sent no device code.")
    url = grant.get("verification_uri_complete") or grant["verification_uri"]
    click.echo(f"To sign in, open {grant['verification_uri']} and enter the code {grant['user_code']}")
    click.echo(f"  (or open {url})")
    cli_ctx.open_browser(url)
    interval = max(1, int(grant.get("interval", 5)))
    deadline = time.monotonic() + int(grant.get("expires_in", 600))
    while time.monotonic() < deadline:
        time.sleep(interval)
        response = cli_ctx.session.post(
            f"{api_base}/cli/device-token", json={"device_code": grant["device_code"]}, timeout=30
        )
        body = response.json() if response.content else {}
        if response.status_code == 200 and body.get("access_token"):
            return body["access_token"], body.get("user") or {}
        code = body.get("detail") or body.get("error")
        if code == "authorization_pending":
            continue
        if code == "slow_down":
            interval += 5
            continue
        if code == "access_denied":
            raise CliError("The login was denied in the browser.")
        if code == "expired_token":
            raise CliError("The login code expired; run `asibench login --device` again.")
        raise CliError(f"Login failed ({response.status_code}): {code or 'unexpected response'}")
    raise CliError("The login code expired before it was approved.")


@click.command("login")
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@click.option("--device", is_flag=True, help="Approve this login in the browser instead of pasting a token.")
@pass_cli
def login(cli_ctx: CliContext, endpoint: str | None, device: bool) -> None:
    """Save a Portal login (a CLI token) for `submit` and `task submit`."""
    api_base = cli_ctx.api_base(endpoint)
    if device:
        token, user = device_login(cli_ctx, api_base)
    else:
        settings_url = token_settings_url(api_base)
        click.echo(f"Create a CLI token at:\n  {settings_url}\n")
        cli_ctx.open_browser(settings_url)
        token, user = "", {}
        last_error = "No token given."
        for _ in range(3):
            token = click.prompt("Paste token", hide_input=True, default="", show_default=False).strip()
            try:
                user = validate_token(cli_ctx, api_base, token)
            except CliError as exc:
                last_error = str(exc)
                click.secho(f"Token not saved: {last_error}", fg="yellow", err=True)
                continue
            break
        else:
            raise CliError(last_error)
    path = cli_ctx.credentials.save(api_base, token, user)
    click.secho(f"Signed in as {who(user)} — credential saved to {path}", fg="green")


@click.command("logout")
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@click.option("--all", "all_endpoints", is_flag=True, help="Forget the saved login for every endpoint.")
@pass_cli
def logout(cli_ctx: CliContext, endpoint: str | None, all_endpoints: bool) -> None:
    """Forget the saved login on this machine (revoke the token itself in Settings)."""
    removed = cli_ctx.credentials.clear(None if all_endpoints else cli_ctx.api_base(endpoint))
    click.echo("Signed out." if removed else "No saved login to remove.")


@click.group("auth")
def auth_group() -> None:
    """Inspect the CLI's login state."""


@auth_group.command("status")
@pass_cli
def status(cli_ctx: CliContext) -> None:
    """Show which credential each Portal endpoint would use, and which Portal commands talk to."""
    env_token = cli_ctx.env.get("ASIBENCH_SUBMIT_TOKEN")
    if env_token:
        click.echo(f"env    ASIBENCH_SUBMIT_TOKEN = {env_token[:12]}…  (takes precedence)")
    entries = cli_ctx.credentials.entries()
    if not entries and not env_token:
        click.echo("Not logged in — run `asibench login`, or set ASIBENCH_SUBMIT_TOKEN.")
    for api_base, entry in entries.items():
        click.echo(
            f"stored {api_base}  as {who(entry.get('user') or {})}  "
            f"({entry['token'][:12]}…, saved {entry.get('created_at') or '?'})"
        )
    endpoint, source = cli_ctx.endpoint(None)
    click.echo(f"Commands talk to {endpoint} (from {source}; --endpoint overrides it).")
