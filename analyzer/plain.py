"""Record classes for the modules every command imports: what ``@dataclass(slots=True)`` gives
(``__init__``, equality, ``repr``, a hash when frozen, :func:`replace`), without generating code
at import time.

``dataclasses`` compiles each class's methods from source when the class is created: about
0.9 ms a class (1.2 ms frozen), and importing it brings ``inspect``, ``ast``, ``dis`` and
``tokenize``. The 33 record classes of the ``stats`` path cost a third of the analyzer's
start-up that way (bench/RESULTS.md, Start-up). :func:`record` reads the same class body (the
annotated fields, their defaults, :func:`field` for a factory or a field left out of equality
and ``repr``) and builds the slotted class with methods written once, here:

* ``__init__`` takes the fields in order, positionally or by name, as a dataclass's does; a
  class on a per-packet path (a decoded field, a message, an exchange) writes its own
  ``__init__`` in its body, which is kept (the generic one binds arguments by a loop);
* ``__eq__`` compares the fields (not those with ``compare=False``) of two objects of the same
  class; a class that is not frozen is unhashable, a frozen one hashes its fields and refuses
  assignment (``dataclasses.FrozenInstanceError``'s message, as an ``AttributeError``), and
  still pickles;
* ``replace(obj, **changes)`` is ``dataclasses.replace``.

The other modules (``check``, the TUI, the filters, TLS) keep ``dataclasses``: they load with
their commands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

__all__ = ["record", "field", "replace", "FIELDS"]

T = TypeVar("T")

FIELDS = "__record_fields__"  # the class attribute: the fields' names in order
_MISSING: Any = object()


class _Spec:
    """What :func:`field` says of one field."""

    __slots__ = ("default", "factory", "compare", "repr")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, compare: bool, repr: bool) -> None:
        self.default, self.factory, self.compare, self.repr = default, factory, compare, repr


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
    repr: bool = True,
) -> Any:
    """A field's default made by ``default_factory`` at each ``__init__`` (or a plain
    ``default``); ``compare=False``: left out of equality and hashing; ``repr=False``: out of
    ``repr``."""
    return _Spec(default, default_factory, compare, repr)


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """The class decorator (``@record`` or ``@record(frozen=True)``); see the module."""

    def wrap(c: type[T]) -> type[T]:
        return _build(c, frozen)

    return wrap if cls is None else wrap(cls)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    names = getattr(type(obj), FIELDS)
    for k in changes:
        if k not in names:
            raise TypeError(f"{type(obj).__name__} has no field {k!r}")
    values = {n: changes[n] if n in changes else getattr(obj, n) for n in names}
    return type(obj)(**values)


def _build(cls: type, frozen: bool) -> type:
    ns = dict(cls.__dict__)
    annotations = ns.get("__annotations__", {})
    names: list[str] = []
    defaults: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any]] = {}
    compared: list[str] = []
    shown: list[str] = []
    for name, ann in annotations.items():
        if isinstance(ann, str) and ann.startswith("ClassVar"):
            continue
        names.append(name)
        spec = ns.pop(name, _MISSING)
        compare = show = True
        if isinstance(spec, _Spec):
            compare, show = spec.compare, spec.repr
            if spec.factory is not None:
                factories[name] = spec.factory
            elif spec.default is not _MISSING:
                defaults[name] = spec.default
        elif spec is not _MISSING:
            defaults[name] = spec
        if compare:
            compared.append(name)
        if show:
            shown.append(name)
    inherited = {s for k in cls.__mro__[1:] for s in k.__dict__.get("__slots__", ())}
    ns["__slots__"] = tuple(n for n in names if n not in inherited)
    ns.pop("__dict__", None)
    ns.pop("__weakref__", None)
    ns[FIELDS] = tuple(names)
    if "__init__" not in ns:
        ns["__init__"] = _init(cls.__qualname__, tuple(names), defaults, factories, frozen)
    if "__repr__" not in ns:
        ns["__repr__"] = _repr(tuple(shown))
    if "__eq__" not in ns:
        ns["__eq__"] = _eq(tuple(compared))
    if frozen:
        ns["__hash__"] = _hash(tuple(compared))
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
        ns["__getstate__"] = _getstate
        ns["__setstate__"] = _setstate
    elif cls.__dict__.get("__hash__") is None:  # (none of its own: unhashable, as a dataclass)
        ns["__hash__"] = None
    new = type(cls)(cls.__name__, cls.__bases__, ns)
    new.__qualname__ = cls.__qualname__
    return new


def _init(
    qualname: str,
    names: tuple[str, ...],
    defaults: dict[str, Any],
    factories: dict[str, Callable[[], Any]],
    frozen: bool,
) -> Callable[..., None]:
    known = frozenset(names)
    count = len(names)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            raise TypeError(f"{qualname}() takes {count} arguments but {len(args)} were given")
        values = dict(
            zip(names, args, strict=False)
        )  # fewer arguments than fields: the rest by name or default
        for k, v in kwargs.items():
            if k not in known:
                raise TypeError(f"{qualname}() got an unexpected keyword argument {k!r}")
            if k in values:
                raise TypeError(f"{qualname}() got multiple values for argument {k!r}")
            values[k] = v
        setter = object.__setattr__
        for name in names:
            if name in values:
                v = values[name]
            elif name in factories:
                v = factories[name]()
            elif name in defaults:
                v = defaults[name]
            else:
                raise TypeError(f"{qualname}() missing required argument: {name!r}")
            setter(self, name, v)

    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({inner})"

    return __repr__


def _eq(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple([getattr(self, n) for n in names]) == tuple([getattr(other, n) for n in names])

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    return __hash__


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise AttributeError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> tuple:
    return tuple(getattr(self, n) for n in getattr(type(self), FIELDS))


def _setstate(self: Any, state: tuple) -> None:
    for n, v in zip(getattr(type(self), FIELDS), state, strict=True):
        object.__setattr__(self, n, v)
