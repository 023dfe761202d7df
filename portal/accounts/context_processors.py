from django.http import HttpRequest

from portal.accounts.selectors import user_is_maintainer


def roles(request: HttpRequest) -> dict[str, bool]:
    return {"is_maintainer": user_is_maintainer(request.user)}
