"""Foreign arrays in the core API: torch tensors and any array with DLPack or ``__array__``.

The core computes on numpy arrays. :func:`to_numpy` views a foreign array as one (zero-copy for CPU arrays, through
DLPack (Python array API standard, 2022, section "Data interchange") or ``__array__``; a device array is copied to
the host), and :func:`like_input` turns a numpy result back into the input's type, dtype and device.
:func:`array_io` wraps a method so that every foreign array among its arguments is converted on entry and its
array results on exit; an ``out=`` buffer that is a foreign array receives the result and is returned.

Nothing here imports torch: a tensor is recognised by its type's module, and ``sys.modules["torch"]`` is used only
when the caller has already passed one.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .errors import GradcodesTypeError

__all__ = ["to_numpy", "like_input", "is_foreign", "array_io"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch" and hasattr(x, "detach")


def _is_torch_dtype(x: Any) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch" and type(x).__name__ == "dtype"


def is_foreign(x: Any) -> bool:
    """True for an array that is not a numpy array but offers DLPack or ``__array__`` (a torch tensor, ...)."""
    if isinstance(x, (np.ndarray, np.generic, np.dtype, list, tuple, str, bytes, type)) or x is None:
        return False                      # types too: np.float32 (a dtype argument) has an __array__ attribute
    return _is_torch(x) or hasattr(x, "__dlpack__") or hasattr(x, "__array__")


def to_numpy(x: Any, name: str = "array") -> np.ndarray:
    """A numpy view of a foreign array (a copy only for arrays off the CPU); numpy arrays pass unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> class Wrapped:                      # any object with __array__
    ...     def __array__(self, dtype=None, copy=None):
    ...         return np.ones(3, dtype=np.float32)
    >>> to_numpy(Wrapped()).dtype
    dtype('float32')
    """
    if isinstance(x, np.ndarray):
        return x
    if _is_torch(x):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.is_conj():
            t = t.resolve_conj()
        try:
            return np.from_dlpack(t)
        except (TypeError, BufferError, RuntimeError) as exc:
            raise GradcodesTypeError(f"{name}: a tensor of dtype {t.dtype} has no numpy equivalent; use float32, "
                                     f"float64, complex64 or complex128 ({exc})") from None
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError, ValueError):
            pass                                  # e.g. a device array: fall back to __array__
    if hasattr(x, "__array__"):
        return np.asarray(x)
    raise GradcodesTypeError(f"{name} must be an array (numpy, a torch tensor, or an object with __dlpack__ or "
                    f"__array__), got {type(x).__name__}")


def like_input(result: Any, like: Any) -> Any:
    """``result`` (a numpy array) as the type, dtype and device of ``like``; other results pass unchanged.

    A torch tensor ``like`` gives a tensor on its device sharing memory with ``result`` on the CPU; an array-API
    array gives ``like.__array_namespace__().asarray(result)``; anything else returns ``result``. Object
    (Fraction) arrays have no tensor form and stay numpy arrays.
    """
    if not isinstance(result, np.ndarray) or result.dtype == object or like is None:
        return result
    if _is_torch(like):
        torch = sys.modules["torch"]
        t = torch.from_numpy(result if result.flags.writeable else result.copy())
        return t if like.device.type == "cpu" else t.to(like.device)
    if hasattr(like, "__array_namespace__"):
        return like.__array_namespace__().asarray(result)
    return result


def _torch_dtype_to_numpy(dt: Any) -> Any:
    torch = sys.modules["torch"]
    return torch.empty(0, dtype=dt).numpy().dtype


def _convert(value: Any, name: str) -> tuple[Any, Any]:
    """``(converted, like)``: foreign arrays (also inside a list or tuple) as numpy, and the first one seen."""
    if is_foreign(value):
        return to_numpy(value, name), value
    if _is_torch_dtype(value):
        return _torch_dtype_to_numpy(value), value
    if isinstance(value, (list, tuple)) and value and any(is_foreign(v) for v in value):
        conv = [to_numpy(v, name) if is_foreign(v) else v for v in value]
        like = next(v for v in value if is_foreign(v))
        return type(value)(conv) if isinstance(value, tuple) else conv, like
    return value, None


def array_io(fn: _F) -> _F:
    """Decorate a core method so that it takes foreign arrays and returns the type of the first one given.

    Every positional and keyword argument is converted by :func:`to_numpy` (also the items of a list or tuple,
    and a torch dtype becomes the numpy dtype); when any was foreign, an ndarray result (or the first item of a
    tuple result) is returned by :func:`like_input`. A foreign ``out`` is computed into (its numpy view on the
    CPU, else a host buffer copied back) and returned itself. Calls with numpy arguments only are unchanged.
    """
    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen: list[Any] = []
        new_args = []
        for a in args:
            c, lk = _convert(a, fn.__name__)
            new_args.append(c)
            if lk is not None:
                seen.append(lk)
        out_foreign = kwargs.get("out")
        if out_foreign is not None and is_foreign(out_foreign):
            view = to_numpy(out_foreign, "out")
            on_host = not _is_torch(out_foreign) or out_foreign.device.type == "cpu"
            kwargs["out"] = view if on_host and view.flags.writeable else np.empty_like(view)
        else:
            out_foreign = None
        for key, v in list(kwargs.items()):
            if key != "out":
                kwargs[key], lk = _convert(v, key)
                if lk is not None:
                    seen.append(lk)
        if not seen and out_foreign is None:
            return fn(self, *args, **kwargs)
        result = fn(self, *new_args, **kwargs)
        if out_foreign is not None:
            if _is_torch(out_foreign) and not np.shares_memory(result, to_numpy(out_foreign, "out")):
                out_foreign.copy_(like_input(np.ascontiguousarray(result), out_foreign))
            return out_foreign
        arrays = [v for v in seen if not _is_torch_dtype(v)]
        if arrays:
            like = arrays[0]
        else:                                     # only a torch dtype was given: a CPU tensor of it
            like = sys.modules["torch"].empty(0, dtype=seen[0])
        if isinstance(result, tuple) and result:
            return (like_input(result[0], like), *result[1:])
        return like_input(result, like)
    return wrapper  # type: ignore[return-value]
