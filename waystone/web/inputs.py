"""What a request carries, read and checked before anything is made of it: a JSON body
held to the rules of every caller's JSON (:mod:`waystone._json_input`: a NUL, a lone
surrogate, NaN, too deep or too long is 400), then validated by its pydantic model (a
field missing or of the wrong type is 422, naming the field, as the reference server
answers); an url-encoded form's fields; a query's paging."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request

from waystone._json_input import parse_json_input
from waystone.errors import BadInput
from waystone.web.replies import HttpError

Model = TypeVar("Model", bound=BaseModel)
UNION_TAGS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "any"})


class Body(BaseModel):
    """A request body: JSON types as they are (no ``"5"`` for a number), fields the
    reference's clients send that Waystone has no use for left aside."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    def given(self, name: str) -> bool:
        """Whether the body names the field (``null`` included)."""
        return name in self.model_fields_set


class Paged(Body):
    """A body (or a query, read with ``strict=False``) that asks for a page of a list:
    ``limit`` (at least one is shown) and ``offset``."""

    limit: int = Field(default=10, ge=0)
    offset: int = Field(default=0, ge=0)

    @property
    def window(self) -> slice:
        return slice(self.offset, self.offset + max(self.limit, 1))


def invalid(exc: ValidationError, what: str = "the body") -> HttpError:
    """422 naming each field that is wrong and what is wrong with it."""
    said: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"] if not _type_tag(p)) or what
        said.setdefault(where, []).append(error["msg"])
    shown = "; ".join(f"{where}: {' or '.join(msgs)}" for where, msgs in said.items())
    return HttpError(422, f"{what} is not valid: {shown}")


def _type_tag(part: str | int) -> bool:
    """Whether a part of an error's location names a member of a union (``list[str]``,
    ``literal['*']``, a model's class), not a field: the caller knows fields only."""
    if isinstance(part, int):
        return False
    return not part.isidentifier() or part in UNION_TAGS or part[:1].isupper()


def validated(
    model: type[Model], data: Mapping[str, Any], what: str = "the body", *, strict: bool = True
) -> Model:
    """``data`` as ``model``; ``strict=False`` for a query string's text."""
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise invalid(exc, what) from None


def parsed(
    model: type[Model], raw: bytes, what: str = "the body", *, empty_ok: bool = False
) -> Model:
    """``raw`` as ``model`` (an empty body as ``{}`` when ``empty_ok``)."""
    return validated(model, json_object(raw, what, empty_ok=empty_ok), what)


async def read(request: Request, model: type[Model]) -> Model:
    """The request's JSON body as ``model``; none at all is ``{}``, as the reference's."""
    return parsed(model, await request.body(), empty_ok=True)


def json_object(raw: bytes, what: str, *, empty_ok: bool = False) -> dict[str, Any]:
    """``raw`` as a JSON object within the limits; :class:`BadInput` if it is not one."""
    if not raw.strip() and empty_ok:
        return {}
    data = parse_json_input(raw, what)
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object")
    return data


def form_fields(raw: bytes) -> dict[str, str]:
    """An url-encoded form's fields (the last value of each)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the form is not UTF-8: {exc}") from exc
    return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
