"""``IN`` lists padded to a few fixed lengths, so their statements stay in the statement cache."""

from __future__ import annotations

from alarmhub.store.commit import fixed_shape


def test_a_list_is_padded_with_its_last_value_to_a_power_of_two() -> None:
    assert fixed_shape(["a"]) == ["a"]
    assert fixed_shape(["a", "b"]) == ["a", "b"]
    assert fixed_shape(["a", "b", "c"]) == ["a", "b", "c", "c"]
    assert fixed_shape(list(range(5))) == [0, 1, 2, 3, 4, 4, 4, 4]
    assert len(fixed_shape(list(range(500)))) == 512


def test_lengths_of_up_to_500_take_ten_shapes() -> None:
    assert len({len(fixed_shape(list(range(n)))) for n in range(1, 501)}) == 10
