"""A model's trainable parameters as one flat vector (``FlatParams``: ``.grad`` as views of one buffer) and its
buffers as raw bytes (``ModelBuffers``: BatchNorm running statistics) for :mod:`gradcodes.torch`.

Staging: Gloo reads and writes host memory only, so the runtime's messages of a model on an accelerator (CUDA) live
in host buffers (pinned for CUDA, allocated once) and ``FlatParams`` moves a whole vector between the device and
such a buffer with one copy per message, not one per tensor: the parameters (or gradients) are gathered into a
device vector allocated once, then copied in one piece (and the reverse for writing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._base.errors import GradcodesTypeError, GradcodesValueError

#: stage through a separate vector even for parameters on the CPU (the tests exercise the staging path on a
#: machine without an accelerator); parameters on any other device are always staged
FORCE_STAGING = False


def wire_device(device: Any, stage: bool, backend: str = "gloo") -> Any:
    """Where the messages of parameters on ``device`` live: the host when staged (Gloo reads host memory only),
    else ``device`` (and always on an NCCL process group, which carries device memory)."""
    import torch

    return torch.device("cpu") if stage and str(backend) != "nccl" else torch.device(device)


def pin(device: Any) -> bool:
    """Whether host message buffers for parameters on ``device`` are pinned (page-locked: CUDA copies from and to
    them run at full speed without a bounce buffer)."""
    import torch

    return torch.device(device).type == "cuda" and torch.cuda.is_available()


class FlatParams:
    """The trainable parameters of a model as one flat vector: copy in, copy out, and ``.grad`` as views of a
    vector.

    Parameters with ``requires_grad=False`` (frozen) are left out: never read, written or given a ``.grad``, so an
    optimizer (AdamW's weight decay, momentum) never moves them; every rank holds the same frozen values from
    its identical initial model.

    :attr:`stage` (parameters off the CPU, or ``FORCE_STAGING``): :meth:`read`, :meth:`write` and
    :meth:`read_grads` go through a vector on the parameters' device, allocated on first use, and one copy
    between it and the caller's vector (a host message buffer).

    Parameters
    ----------
    params : sequence of torch.Tensor
        The model's parameters (``model.parameters()``), in the order of the flat vector; those with
        ``requires_grad=False`` are left out.

    Raises
    ------
    GradcodesValueError
        If no parameter requires a gradient, or the parameters are on several devices.
    GradcodesTypeError
        If the parameters have several dtypes.

    Examples
    --------
    >>> import torch
    >>> from gradcodes.torch import FlatParams
    >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)           # weight (1, 2) and bias (1,)
    >>> flat = FlatParams(model.parameters())
    >>> flat.size, flat.numels, flat.dtype, flat.stage
    (3, [2, 1], torch.float64, False)
    """

    def __init__(self, params: Sequence[Any]) -> None:
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise GradcodesValueError("params must hold at least one tensor with requires_grad=True")
        self.numels = [int(p.numel()) for p in self.params]
        #: the device of the parameters: every buffer of the runtime is allocated there
        self.device = self.params[0].device
        if any(p.device != self.device for p in self.params):
            raise GradcodesValueError("all parameters must be on one device")
        self.size = sum(self.numels)
        self.dtype = self.params[0].dtype
        if any(p.dtype != self.dtype for p in self.params):
            raise GradcodesTypeError("all parameters must have one dtype")
        #: whether messages are staged through host memory (parameters off the CPU, or FORCE_STAGING)
        self.stage = self.device.type != "cpu" or FORCE_STAGING
        self._scratch: Any = None

    def _staged(self, vec: Any) -> Any:
        """The vector to gather into or scatter from: ``vec`` itself, or (staging) the device vector."""
        if not self.stage:
            return vec
        if self._scratch is None:
            import torch

            self._scratch = torch.empty(self.size, dtype=self.dtype, device=self.device)
        return self._scratch

    def _views(self, vec: Any) -> list[Any]:
        out, o = [], 0
        for p, c in zip(self.params, self.numels, strict=True):
            out.append(vec[o:o + c].view_as(p))
            o += c
        return out

    def read(self, out: Any) -> None:
        """Copy the parameters into ``out`` (length ``size``; staged: one copy into ``out``).

        Parameters
        ----------
        out : torch.Tensor, shape (size,)
            A vector of the parameters' dtype (on their device, or the host when :attr:`stage`), overwritten.

        Examples
        --------
        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
        >>> with torch.no_grad():
        ...     _ = model.weight.copy_(torch.tensor([[1.0, 2.0]])), model.bias.fill_(3.0)
        >>> flat = FlatParams(model.parameters())
        >>> out = torch.empty(flat.size, dtype=flat.dtype)
        >>> flat.read(out)
        >>> out.tolist()                                           # the weight, then the bias
        [1.0, 2.0, 3.0]
        """
        vec = self._staged(out)
        for v, p in zip(self._views(vec), self.params, strict=True):
            v.copy_(p.detach())
        if vec is not out:
            out.copy_(vec)

    def write(self, vec: Any) -> None:
        """Copy ``vec`` into the parameters (staged: one copy from ``vec``).

        Parameters
        ----------
        vec : torch.Tensor, shape (size,)
            The new parameters, in the order of :meth:`read`.

        Examples
        --------
        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
        >>> FlatParams(model.parameters()).write(torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64))
        >>> model.weight.tolist(), model.bias.tolist()
        ([[4.0, 5.0]], [6.0])
        """
        src = self._staged(vec)
        if src is not vec:
            src.copy_(vec)
        for v, p in zip(self._views(src), self.params, strict=True):
            p.data.copy_(v)

    def read_grads(self, out: Any) -> None:
        """Copy the parameters' gradients into ``out`` (zeros where a gradient is None; staged: one copy into
        ``out``).

        Parameters
        ----------
        out : torch.Tensor, shape (size,)
            A vector of the parameters' dtype, overwritten.

        Examples
        --------
        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
        >>> flat = FlatParams(model.parameters())
        >>> out = torch.empty(flat.size, dtype=flat.dtype)
        >>> flat.read_grads(out)                                    # no backward pass yet: zeros
        >>> out.tolist()
        [0.0, 0.0, 0.0]
        >>> model(torch.tensor([[2.0, 3.0]], dtype=torch.float64)).sum().backward()
        >>> flat.read_grads(out)
        >>> out.tolist()
        [2.0, 3.0, 1.0]
        """
        vec = self._staged(out)
        for v, p in zip(self._views(vec), self.params, strict=True):
            if p.grad is None:
                v.zero_()
            else:
                v.copy_(p.grad)
        if vec is not out:
            out.copy_(vec)

    def set_grads(self, vec: Any) -> None:
        """Make each parameter's ``.grad`` a view of ``vec`` (no copy).

        Parameters
        ----------
        vec : torch.Tensor, shape (size,)
            The gradient vector (e.g. a decoded gradient), in the order of :meth:`read`; later changes to it
            show in the ``.grad`` of the parameters.

        Examples
        --------
        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
        >>> g = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        >>> FlatParams(model.parameters()).set_grads(g)
        >>> model.weight.grad.tolist(), model.bias.grad.tolist()
        ([[1.0, 2.0]], [3.0])
        >>> _ = g.zero_()
        >>> model.bias.grad.item()                                 # a view of g: no copy
        0.0
        """
        for v, p in zip(self._views(vec), self.params, strict=True):
            p.grad = v


class ModelBuffers:
    """A model's buffers (``model.buffers()``: BatchNorm's running mean and variance and its
    ``num_batches_tracked`` counter, any dtype) as raw bytes, each buffer starting on an 8-byte boundary.

    They travel after every message (``gradcodes.torch._children.trailer``): the master's with the parameters,
    each worker's, as its forward passes left them, with its coded message; no buffers, no bytes."""

    def __init__(self, buffers: Sequence[Any] = ()) -> None:
        self.buffers = list(buffers)
        self.offsets: list[int] = []
        self.sizes: list[int] = []
        o = 0
        for b in self.buffers:
            c = int(b.numel()) * b.element_size()
            self.offsets.append(o)
            self.sizes.append(c)
            o += -(-c // 8) * 8
        #: the bytes they take in a message
        self.nbytes = o

    def pack(self, out: Any) -> None:
        """Copy the buffers' bytes into ``out`` (uint8, length ``nbytes``)."""
        import torch

        for b, o, c in zip(self.buffers, self.offsets, self.sizes, strict=True):
            out[o:o + c].copy_(b.detach().contiguous().reshape(-1).view(torch.uint8))

    def unpack(self, src: Any) -> None:
        """Copy the bytes of ``src`` (uint8, as :meth:`pack` wrote them) into the buffers."""
        for b, o, c in zip(self.buffers, self.offsets, self.sizes, strict=True):
            b.data.copy_(src[o:o + c].view(b.dtype).view(b.shape))
