"""Tensors in and out of models through DLPack, without copies: inputs are read where the
caller keeps them, results are fresh arrays the caller owns, and `out=` buffers are written
in place (address checks on the pointers the native entry receives)."""

import numpy as np
import pytest
import relay

DENSE = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(6, 8), float32]) {
  %0 = nn.relu(nn.dense(%x, %w));
  (%0, add(%0, 1f))
}
"""

ELEMENTWISE = """#[version = "0.0.5"]
def @main(%x: Tensor[(5, 7), float32]) { nn.relu(multiply(%x, 2f)) }
"""

PASSTHROUGH = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  (%x, reshape(%x, newshape=[3, 2]), %x, ones(shape=[2], dtype="float32"))
}
"""


class Producer:
    """A foreign tensor that speaks only the DLPack protocol, over a numpy array.
    `versioned=False` is the old protocol (`__dlpack__(stream)` only)."""

    def __init__(self, array, device=(1, 0), versioned=True):
        self.array = array
        self.device = device
        self.versioned = versioned

    def __dlpack__(self, stream=None, **kwargs):
        if self.versioned:
            return self.array.__dlpack__(stream=stream, **kwargs)
        if kwargs:
            raise TypeError("unexpected keyword arguments")
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.device


class EntrySpy:
    """Wraps a model's native library and records the input and output pointers of every
    entry call."""

    def __init__(self, library, n_in, n_out):
        self.library = library
        self.object_code = library.object_code
        self.n_in, self.n_out = n_in, n_out
        self.calls = []

    def get(self, name):
        fn = self.library.get(name)

        def call(ins, outs, params, workspace):
            self.calls.append(
                ([ins[i] for i in range(self.n_in)], [outs[i] for i in range(self.n_out)])
            )
            return fn(ins, outs, params, workspace)

        return call


def _spied(text):
    model = relay.build(relay.parse(text), target="llvm -num-threads=1")
    assert model.native
    spy = EntrySpy(model.library, len(model.input_names), len(model.output_slots))
    model.library = spy
    return model, spy


@pytest.fixture(scope="module")
def dense():
    return _spied(DENSE)


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _dense_ref(x, w):
    h = np.maximum(x @ w.T, 0)
    return h, h + 1


def test_numpy_and_foreign_inputs_reach_native_code_without_a_copy(dense):
    model, spy = dense
    x, w = _data((4, 8)), _data((6, 8), 1)
    for given_x in (x, Producer(x), Producer(x, versioned=False)):
        spy.calls.clear()
        got = model.run(given_x, w=Producer(w))
        ((ins, _),) = spy.calls
        assert ins == [x.ctypes.data, w.ctypes.data]  # the caller's memory itself
        for g, want in zip(got, _dense_ref(x, w)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    # np.from_dlpack, which the models use, shares memory with the producer.
    assert np.shares_memory(np.from_dlpack(Producer(x)), x)


def test_results_are_fresh_writeable_arrays_that_export_dlpack(dense):
    model, _ = dense
    x, w = _data((4, 8)), _data((6, 8), 1)
    first = model.run(x, w)
    second = model.run(x, w)
    for a, b in zip(first, second):
        assert a.flags.writeable and a.flags.c_contiguous
        assert not np.may_share_memory(a, b)
        assert not any(np.may_share_memory(a, i) for i in (x, w))
        assert np.shares_memory(np.from_dlpack(a), a)  # what torch.from_dlpack would see
    assert not np.may_share_memory(first[0], first[1])


@pytest.mark.parametrize("target", ["llvm -num-threads=1", "interp"])
def test_results_never_alias_inputs_constants_or_each_other(target):
    model = relay.build(relay.parse(PASSTHROUGH), target=target)
    x = _data((2, 3))
    got = model.run(Producer(x))
    assert np.array_equal(got[0], x) and np.array_equal(got[1], x.reshape(3, 2))
    for k, a in enumerate(got):
        assert a.flags.writeable
        assert not np.may_share_memory(a, x)
        assert not any(np.may_share_memory(a, b) for b in got[k + 1 :])
    got[3][...] = 5  # writing a result does not change the model's constant
    np.testing.assert_array_equal(model.run(x)[3], np.ones(2, dtype="float32"))


def test_out_buffers_are_written_in_place_by_the_kernels(dense):
    model, spy = dense
    x, w = _data((4, 8)), _data((6, 8), 1)
    out = (np.full((4, 6), np.nan, dtype="float32"), np.full((4, 6), np.nan, dtype="float32"))
    spy.calls.clear()
    returned = model.run(x, w, out=out)
    assert returned is out
    ((_, outs),) = spy.calls
    assert outs == [out[0].ctypes.data, out[1].ctypes.data]  # no intermediate output array
    for g, want in zip(out, _dense_ref(x, w)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    # A foreign buffer is written in place too, and returned as given.
    target = np.zeros((4, 6), dtype="float32")
    foreign = (Producer(target), np.zeros((4, 6), dtype="float32"))
    assert model.run(x, w, out=foreign) is foreign
    np.testing.assert_allclose(target, _dense_ref(x, w)[0], rtol=1e-5, atol=1e-6)


def test_strided_or_overlapping_out_buffers_get_the_right_values():
    model, spy = _spied(ELEMENTWISE)
    x = _data((5, 7))
    want = np.maximum(x * 2, 0)
    wide = np.zeros((5, 14), dtype="float32")
    assert model.run(x, out=wide[:, ::2]) is not None
    np.testing.assert_array_equal(wide[:, ::2], want)
    np.testing.assert_array_equal(wide[:, 1::2], 0)  # nothing else was touched
    # In place over the input: the kernels write a temporary, copied at the end.
    spy.calls.clear()
    assert model.run(x, out=x) is x
    ((_, outs),) = spy.calls
    assert outs != [x.ctypes.data]
    np.testing.assert_array_equal(x, want)


def test_wrong_out_buffers_are_errors_naming_them(dense):
    model, _ = dense
    x, w = _data((4, 8)), _data((6, 8), 1)
    good = np.zeros((4, 6), dtype="float32")
    cases = {
        "a tuple of 2": good,
        r"tuple of 2 output buffers; got a list of 1": [good],
        r"`out\[1\]`: expected an output buffer of Tensor\[\(4, 6\), float32\], got "
        r"Tensor\[\(6, 4\), float32\]": (good, np.zeros((6, 4), dtype="float32")),
        r"`out\[0\]`.*float32.*float64": (np.zeros((4, 6)), good),
        r"`out\[1\]`.*not a str": (good, "buffer"),
    }
    for message, out in cases.items():
        with pytest.raises(relay.Error, match=message):
            model.run(x, w, out=out)
    frozen = np.zeros((4, 6), dtype="float32")
    frozen.flags.writeable = False
    with pytest.raises(relay.Error, match=r"`out\[0\]`.*read-only"):
        model.run(x, w, out=(frozen, good))


def test_foreign_inputs_that_cannot_be_shared_are_clear_errors(dense):
    model, _ = dense
    x, w = _data((4, 8)), _data((6, 8), 1)
    with pytest.raises(relay.Error, match=r"argument `x`: the tensor is on cuda:0.*CPU"):
        model.run(Producer(x, device=(2, 0)), w)
    with pytest.raises(relay.Error, match=r"argument `x`.*not C-contiguous"):
        model.run(Producer(_data((8, 8))[::2]), w)
    with pytest.raises(relay.Error, match=r"argument `w`.*float32.*float64"):
        model.run(x, Producer(w.astype("float64")))


def test_interpreted_models_take_foreign_tensors_and_out_buffers():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%n: int32, %x: Tensor[(3,), float32]) {
  if (%n > 0) { (%x * 2f, %n) } else { (%x, %n) }
}"""
    )
    model = relay.build(mod, target="interp")
    assert not model.native
    x = np.array([1.0, -2.0, 3.0], dtype="float32")
    got = model.run(np.int32(1), Producer(x))
    np.testing.assert_array_equal(got[0], x * 2)
    got = model.run(np.int32(0), x=Producer(x))
    assert not np.may_share_memory(got[0], x)  # the input is not handed back
    out = (np.zeros(3, dtype="float32"), np.zeros((), dtype="int32"))
    assert model.run(3, Producer(x), out=out) is out
    np.testing.assert_array_equal(out[0], x * 2)
    assert out[1] == 3
    with pytest.raises(relay.Error, match=r"`out\[1\]`.*int32.*int64"):
        model.run(3, x, out=(out[0], np.zeros((), dtype="int64")))
    # The debug executor is the same interpreted model.
    run = relay.create_executor("debug", mod=mod).evaluate()
    buffer = np.zeros(3, dtype="float32")
    run(2, Producer(x), out=(Producer(buffer), np.zeros((), dtype="int32")))
    np.testing.assert_array_equal(buffer, x * 2)


def test_a_parameter_named_out_is_an_input_not_a_buffer():
    mod = relay.parse(
        '#[version = "0.0.5"]\ndef @main(%out: Tensor[(3,), float32]) { add(%out, 1f) }'
    )
    x = np.arange(3, dtype="float32")
    for model in (relay.build(mod), relay.build(mod, target="interp")):
        np.testing.assert_array_equal(model.run(out=x), x + 1)
        np.testing.assert_array_equal(x, np.arange(3))
