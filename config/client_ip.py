"""The client's network, read the way DRF's throttles read it: REMOTE_ADDR, or, behind
DJANGO_NUM_PROXIES trusted proxies, that many X-Forwarded-For entries from the right. A client can
write anything at the left of X-Forwarded-For, so the left is never believed."""

import hashlib
import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest

# One IPv6 subscriber gets a whole /64; counting addresses inside it would let one machine be many.
IPV6_NETWORK_PREFIX = 64


def client_address(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "") or ""
    proxies = settings.REST_FRAMEWORK.get("NUM_PROXIES") or 0
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            remote = hops[-min(proxies, len(hops))]
    return remote


def client_network(request: HttpRequest) -> str:
    """The client's IPv4 address, or the first address of its IPv6 /64 (still a valid address, so it
    fits address columns); an unparsable address is kept as is."""
    address = client_address(request)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_NETWORK_PREFIX}", strict=False).network_address)
    return str(parsed)


def network_fingerprint(request: HttpRequest) -> str:
    """A keyed fingerprint of the client's network: equal for equal networks, useless without the key,
    so what is stored about a rater's network can never be turned back into an address."""
    message = f"network:{client_network(request)}".encode()
    return hmac.new(settings.PANEL_ID_HMAC_KEY.encode(), message, hashlib.sha256).hexdigest()
