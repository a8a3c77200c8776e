"""Comment ids (comments/ids.py): length, alphabet, every character uniform, one read of the random source."""

import random
from collections import Counter

from comments import ids
from comments.ids import is_comment_id, new_comment_id


def test_an_id_has_its_length_and_only_the_alphabets_characters():
    for length in (1, 8, 12, 32):
        drawn = [new_comment_id(length) for _ in range(200)]
        assert all(len(cid) == length and is_comment_id(cid) for cid in drawn)
    assert len({new_comment_id(12) for _ in range(2000)}) == 2000


def test_every_position_takes_every_character(monkeypatch):
    # The smallest and largest numbers below 36**length: all zeros, all z's (no digit is lost at either end).
    monkeypatch.setattr(ids.secrets, "randbelow", lambda bound: 0)
    assert new_comment_id(8) == "00000000"
    monkeypatch.setattr(ids.secrets, "randbelow", lambda bound: bound - 1)
    assert new_comment_id(8) == "zzzzzzzz"
    monkeypatch.setattr(ids.secrets, "randbelow", lambda bound: 35 * 36 ** 7 + 10)
    assert new_comment_id(8) == "a000000z"


def test_the_characters_are_drawn_evenly():
    counts = Counter("".join(new_comment_id(8) for _ in range(4500)))  # 36,000 characters: 1,000 each expected
    assert set(counts) == set(ids._ALPHABET)
    assert all(800 < n < 1200 for n in counts.values())  # about 6.3 standard deviations either side


def test_an_id_is_drawn_from_the_random_source_in_one_number_not_a_draw_per_character(monkeypatch):
    draws = []
    real = random.SystemRandom.getrandbits
    monkeypatch.setattr(random.SystemRandom, "getrandbits", lambda self, k: draws.append(k) or real(self, k))
    for _ in range(200):
        new_comment_id(12)
    # randbelow(36**12) draws 63 bits and draws again above the bound (about 2 draws an id on
    # average); a draw per character would be 12 or more.
    assert len(draws) < 3 * 200
