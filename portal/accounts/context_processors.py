from django.http import HttpRequest

from portal.accounts.selectors import user_email_verified, user_is_maintainer


def roles(request: HttpRequest) -> dict[str, bool]:
    signed_in = request.user.is_authenticated
    return {"is_maintainer": user_is_maintainer(request.user),
            "email_unverified": signed_in and not user_email_verified(request.user)}
