"""One exception type for "these responders cannot recover the gradient": gc.DecodingError (a GradcodesValueError
and a ValueError, so older ``except`` clauses still catch it), on every path: decode, decoding_matrix, the tree's
decode / execute / decoding_matrix; malformed responders (repeated, out of range, wrong type) keep their
GradcodesValueError / GradcodesTypeError, and decodable answers False without raising."""

import numpy as np
import pytest

import gradcodes as gc


def _is_decoding_error(exc: BaseException, responders: list[int] | None = None) -> None:
    assert isinstance(exc, gc.DecodingError)
    assert isinstance(exc, gc.GradcodesValueError) and isinstance(exc, ValueError)
    if responders is not None:
        assert exc.responders == responders


@pytest.mark.parametrize("field", ["real", "rational"])
def test_too_few_responders_raise_decoding_error_from_decode_and_decoding_matrix(field):
    code = gc.cyclic_repetition(6, 2, rng=0, field=field)
    Y = code.encode(np.ones((6, 3)) if field == "real" else np.ones((6, 3), dtype=np.int64))
    with pytest.raises(gc.DecodingError, match="cannot recover the gradient") as info:
        code.decode([0, 1, 2], Y[[0, 1, 2]])
    _is_decoding_error(info.value, [0, 1, 2])
    with pytest.raises(gc.DecodingError) as info:
        code.decoding_matrix([4, 1, 2])
    _is_decoding_error(info.value, [1, 2, 4])
    with pytest.raises(gc.DecodingError):
        code.decode([], Y[:0])
    assert code.decodable([0, 1, 2]) is False                       # a question, not an error
    if field == "real":                                              # malformed responders keep their errors
        for responders, kind in (([0, 0, 1, 2], gc.GradcodesValueError), ([0, 1, 2, 9], gc.GradcodesValueError),
                                 ("0123", gc.GradcodesTypeError)):
            with pytest.raises(kind) as info:
                code.decode(responders, Y)
            assert not isinstance(info.value, gc.DecodingError)
            with pytest.raises(kind) as info:
                code.decoding_matrix(responders)
            assert not isinstance(info.value, gc.DecodingError)


def test_a_set_of_one_group_of_fractional_repetition_raises_decoding_error():
    """Smaller than n - s is fine when it decodes (one worker per group); one whole group is not."""
    code = gc.fractional_repetition(6, 2)                            # groups {0, 1, 2}, {3, 4, 5}
    Y = code.encode(np.ones((6, 2)))
    assert code.decode([0, 5], Y[[0, 5]]).shape == (2,)
    with pytest.raises(gc.DecodingError) as info:
        code.decode([0, 1, 2], Y[[0, 1, 2]])
    _is_decoding_error(info.value, [0, 1, 2])
    with pytest.raises(gc.DecodingError):
        code.decoding_matrix([0, 1, 2])
    assert not code.decodable([0, 1, 2])


def test_a_tree_pattern_with_too_few_children_raises_decoding_error():
    code = gc.coded_reduce(3, 2, 1)                                  # the master's children are workers 0, 1, 2
    Y = code.encode(np.ones((code.k, 2)))
    bad = list(range(3, 12))                                         # every child of the master straggles
    for call in (lambda: code.decode(bad, Y[bad]), lambda: code.execute(bad, Y),
                 lambda: code.decoding_matrix(bad)):
        with pytest.raises(gc.DecodingError, match="the master has only 0 responding children") as info:
            call()
        _is_decoding_error(info.value, bad)
    assert code.decodable(bad) is False

