"""The agent roles of TMAS and the phrase that names each role in its system prompt."""

from typing import Literal

Role = Literal["solver", "verifier", "summary", "experience", "guideline"]

ROLES: tuple[Role, ...] = ("solver", "verifier", "summary", "experience", "guideline")

# Every system prompt of a role starts with "You are the <marker>"; tools that must know
# which role sent a request (scripted test models, usage accounting) look for it.
ROLE_MARKERS: dict[Role, str] = {
    "solver": "solution agent",
    "verifier": "verification agent",
    "summary": "summary agent",
    "experience": "experience agent",
    "guideline": "guideline agent",
}


def role_of_prompt(system_text: str) -> Role | None:
    """Return the role whose marker opens ``system_text``, or None.

    Example:
        >>> role_of_prompt("You are the verification agent of a team ...")
        'verifier'
    """
    head = system_text[:200].lower()
    for role, marker in ROLE_MARKERS.items():
        if f"you are the {marker}" in head:
            return role
    return None
