r"""Ye & Abbe, "Communication-Computation Efficient Gradient Coding" (ICML 2018): every worker sends 1/m of a gradient.

``n`` workers, ``k = n`` partitions (or ``n | k`` by grouping), worker ``i`` stores the cyclic window
``{i, ..., i+d-1} mod n`` of ``d = s + m`` partitions, splits every partial gradient into ``m`` contiguous blocks
and sends one coded vector of length ``ceil(length/m)``. Any ``n - s`` responders recover the full sum. The load
``s + m`` meets the lower bound of :func:`gradcodes.min_load` with equality.

One algebraic scheme, three realisations (``nodes=``):

``"fourier"`` (default)
    Real trigonometric polynomials at the angles ``2 pi k / n`` (the real form of complex roots of unity), worker
    ``i`` at angle ``2 pi (q i mod n) / n`` for a stride ``q`` coprime to ``n``, decoded from the *top* ``m``
    Fourier coefficients of the interpolant. Closed-form, cancellation-free decoder, and a proven bound on the
    cancellation factor for every responder set (``code.cancellation_bound``). Worst searched float64 error
    ~1e-13 at ``(n, s, m) = (50, 5, 5)`` and still ~1e-13 at ``n = 200`` (the published construction fails for
    ``n >= 15`` at ``s = m = 5``).
``"chebyshev"``, ``"equispaced"``, ``"integer"`` or a sequence of nodes
    The published construction (Ye & Abbe 2018): polynomials of degree ``< n - s`` at real nodes, decoded from the top
    ``m`` monomial coefficients of the interpolant (closed-form Lagrange weights, never a Vandermonde inverse).
    Exact over the rationals for rational nodes (``field="rational"``). Ill-conditioned beyond ``n ~ 20``.
``"random"``
    The same structure with a seeded Gaussian "generator" ``V`` and functionals ``C`` (decodable with
    probability 1; exact over the rationals with ``field="rational"``).

The general construction
------------------------
Let ``N = n - s`` and let ``T`` be an ``N``-dimensional space of functions that is *unisolvent* on the nodes
(every ``N`` of the ``n`` node values determine the function), with ``m`` linear functionals
``kappa_1..kappa_m`` on ``T``. Partition ``j`` is missing at the ``n - d`` workers ``j+1, ..., j+n-d`` ("non-holders")
and ``Z_j`` denotes the subspace of ``T`` vanishing there (dimension ``m``). If the ``m x m`` matrix
``M_j = [kappa_u(z_w)]`` is invertible for a basis ``z_w`` of ``Z_j``, define ``p_j^(u) in Z_j`` by
``kappa_v(p_j^(u)) = delta_uv`` and ``B[i, j*m + u] = p_j^(u)(node_i)``. Then

* **support**: ``B[i, j*m+u] = 0`` whenever worker ``i`` does not hold partition ``j`` (``p_j^(u)`` vanishes there);
* **recovery**: worker ``i`` sends ``Q(node_i)`` with ``Q = sum_{j,u} g_j^(u) p_j^(u) in T``. From any ``N``
  responders ``F``, ``Q`` is determined (unisolvence) and ``kappa_u(Q) = sum_j g_j^(u)``. With ``L_i^F`` the
  Lagrange basis of ``T`` on ``F``, ``A_F[u, i] = kappa_u(L_i^F)`` and ``A_F B = 1^T (x) I_m`` exactly.

For ``"fourier"``: ``T`` = real trigonometric polynomials with frequencies ``-(N-1)/2, ..., (N-1)/2`` (half
integers when ``N`` is even); it is unisolvent on any ``N`` distinct angles because
``Q(phi) = e^{-i(N-1)phi/2} P(e^{i phi})`` with ``P`` a polynomial of degree ``< N``. ``Z_j`` is
``S_j(phi) R(phi)`` with ``S_j(phi) = prod_t 2 sin((phi - phi_t)/2)`` over the non-holders' angles and ``R`` a
trigonometric polynomial of degree ``(m-1)/2``. The functionals are the real and imaginary parts of the top
Fourier coefficients ``c(f) = (1/n) sum_k Q(phi_k) e^{-i f phi_k}``, ``f = (N-1)/2, (N-3)/2, ...`` (plus one
phase-shifted real part when ``m`` is odd), the exact analogue of the paper's top monomial coefficients. The
windows are rotations of each other (also after the stride permutation), so the pairs are rotation covariant and
``M_j`` is the same matrix for every ``j`` up to a rotation; invertibility is checked at construction, and the
whole identity ``A_F B = E`` is checked exactly over ``GF(p)``, ``p = 1 mod 8n`` (the same code path with a
primitive ``8n``-th root of unity for ``e^{i pi/(4n)}``), by ``verify(code, field="GF")``.

Decoding (stable closed form). With ``z_k = e^{2 pi i k/n}``, the top coefficient of the interpolant from ``F`` is
``sum_{i in F} y_i h_i^{N-1} w_i^F`` with ``w_i^F = (z_i/n) prod_{l in S} (z_i - z_l)`` and the next ones carry the
complete homogeneous sums ``h_r`` of ``s + 1`` unit-modulus numbers, so for *every* straggler set
``sum_i |A_F[u, i]| <= 2^(s+1) C(s + r, r)`` (``r`` = rank of the frequency from the top): the decoder side of
the cancellation factor does not depend on ``n`` or on the pattern. The encoder side, ``max_i ||B_i||_1``, is a
property of the matrix alone; in natural order (``q = 1``) the holders of a partition are ``d`` adjacent angles,
``S_j`` is a narrow bump there and its top Fourier coefficients are ``(n / 2 pi)^(d-1)`` times smaller than its
values, so ``B`` explodes. Spreading the holders around the circle with a stride removes that; the stride
minimising ``max_i ||B_i||_1`` is chosen at construction. Together:
``canc(A_F) <= code.cancellation_bound`` for every responder set, proven rather than searched.

``spacing="auto"`` (or a number) gives the intermediate design studied on the way: Fourier functionals spread
over the band in natural order (good ``B``, but its decoder grows like ``n^(s-1)`` on consecutive stragglers);
``stride=1`` the natural-order top design. See ``docs/ye_abbe.md`` and ``benchmarks/numerics/ye_abbe_numerics.py``.

Layout: ``fourier.py`` (the Fourier construction and its decoders), ``fourier_plan.py`` (choice of functionals
and stride), ``polynomial.py`` (the published polynomial construction and the node choices), ``gaussian.py`` (the
random construction), ``decoder.py`` (:class:`YeAbbeDecoder`), ``constructor.py`` (:func:`ye_abbe`, its scheme),
``common.py`` (holder windows, power series); all arithmetic goes through :mod:`gradcodes._core.fields`.
"""

from .constructor import YeAbbeCode, family_entries, ye_abbe
from .decoder import YeAbbeDecoder
from .polynomial import NODE_CHOICES

__all__ = ["ye_abbe", "YeAbbeCode", "YeAbbeDecoder", "family_entries", "NODE_CHOICES"]
