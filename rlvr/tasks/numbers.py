"""Integers that number-theoretic and machine-word shortcuts are wrong on (issue 33: the
rare numbers a random draw never reaches), and the tests that recognise them.

- primality: exact Miller-Rabin (`is_prime`); composites that pass a Fermat test to base 2
  (Carmichael numbers, the least strong pseudoprimes to the first k prime bases, from the
  literature: OEIS A002997, A014233), and products of two primes past 46,340 (the root of
  2**31: a trial division capped there, or a 32-bit `i * i`, calls them prime);
- Euclid's worst case: consecutive Fibonacci numbers (a gcd needs one step per index);
- machine words: the edges of 32- and 64-bit integers and of float-exact ones (2**53 + 1,
  2**63 - 1, -2**63, 2**64, 2**61 - 1), and values far past them (2**300 + 1, 10**40),
  drawn only where the caller says the reference computes exactly on integers; lists
  whose every value lies past one side of an edge (a sentinel), lists of values equal
  modulo a word or a hashing prime (a fingerprint), squares past 2**120 (a root found
  with a step budget), and a small number beside a 1,001-bit one (a gcd with a round budget).

Pure functions of their arguments and the generator the caller seeds.
"""

from __future__ import annotations

import math
import random

FLOAT_EXACT = 2**52  # at most this, an honest float round trip is exact
TRIAL_CAP = 46340  # isqrt(2**31 - 1): where a 32-bit i * i overflows
_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
CARMICHAEL = (561, 1105, 1729, 2465, 2821, 6601, 8911, 41041, 825265)
# the least strong pseudoprimes to all of the first k prime bases, k = 1..7 (A014233), then
# those past 2**52 (k = 9 and k = 12)
STRONG_PSEUDOPRIMES = (2047, 1373653, 25326001, 3215031751, 2152302898747, 3474749660383, 341550071728321)
_BIG_STRONG = (3825123056546413051, 318665857834031151167461)
_PRIMORIAL_CAP: int | None = None  # the product of the primes up to TRIAL_CAP, made on first use


def is_prime(n: int) -> bool:
    """Miller-Rabin with the first thirteen prime bases: exact for every n below 3.3e24
    (the least strong pseudoprime to all of them, A014233)."""
    if n < 2:
        return False
    for p in _BASES:
        if n % p == 0:
            return n == p
    return all(_strong_probable(n, a) for a in _BASES)


def _strong_probable(n: int, a: int) -> bool:
    """n (odd, > a) passes Miller-Rabin's test to base a."""
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    x = pow(a, d, n)
    if x in (1, n - 1):
        return True
    for _ in range(r - 1):
        x = x * x % n
        if x == n - 1:
            return True
    return False


def prime_at_most(k: int) -> int:
    while not is_prime(k):
        k -= 1
    return k


def prime_above(k: int) -> int:
    k += 1
    while not is_prime(k):
        k += 1
    return k


def round_prime_squares(rng: random.Random) -> list[int]:
    """Squares of the first prime past each power of ten from 10**2 to 10**7, and past a
    power of two drawn from 2**5 to 2**25 (all within float exactness): a trial division
    by a table of primes below a round bound (1,000; 1,024), then a shortcut that calls
    anything below the table's square prime, is wrong first on exactly these (blind set
    7: 1,009**2 past a table to 1,000), and a square with a random root lands there by luck."""
    return [prime_above(10**e) ** 2 for e in range(2, 8)] + [prime_above(2 ** rng.randint(5, 25)) ** 2]


def round_prime(p: int) -> bool:
    """Whether `p` is the first prime past a power of ten or of two (`round_prime_squares`' roots)."""
    return p > 2 and any(prime_above(b) == p for b in (10 ** (len(str(p)) - 1), 1 << (p.bit_length() - 1)))


def pseudoprimes(rng: random.Random, exact: bool) -> list[int]:
    """Composites that a Fermat test or a Miller-Rabin test with fixed bases calls prime:
    a Carmichael number; 3215031751, which fools the first four bases and still yields
    to trial division in milliseconds; 3474749660383, the first six; where the caller
    says `exact`, the first nine (3825123056546413051, with a factor of six digits that
    trial division finds at once) and the first twelve (whose least factor has twelve
    digits: a trial-division reference cannot answer it in time). A number that fools k
    bases fools every test with fewer, so these few stand for the table."""
    return [rng.choice(CARMICHAEL), 3215031751, 3474749660383, *(_BIG_STRONG if exact else ())]


def pseudoprime(rng: random.Random, exact: bool) -> int:
    """One of the table: a Carmichael number or a least strong pseudoprime."""
    return rng.choice([*CARMICHAEL, *STRONG_PSEUDOPRIMES, *(_BIG_STRONG if exact else ())])


def bases_fooled(n: int) -> int:
    """How many of the first prime bases in a row call the odd composite n a strong
    probable prime (0: not even base 2)."""
    count = 0
    for a in _BASES:
        if not _strong_probable(n, a):
            return count
        count += 1
    return count


def semiprime(rng: random.Random) -> int:
    """p * q with both primes past TRIAL_CAP, below 60,000 (a reference's trial division
    takes milliseconds, far from its time limit on any machine), half the time p == q."""
    p = prime_above(rng.randint(TRIAL_CAP, 60000))
    return p * (p if rng.random() < 0.5 else prime_above(rng.randint(TRIAL_CAP, 60000)))


def fibonacci_pair(rng: random.Random, exact: bool) -> tuple[int, int]:
    """(F(k + 1), F(k)) at the top of the range: k from 66 to 75 (F(76) is the last below 2**52),
    or where the caller says `exact`, from 70 to 200."""
    k = rng.randint(70, 200) if exact else rng.randint(66, 75)
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return b, a


def widths(exact: bool) -> tuple[int, ...]:
    """The bit widths `machine_edge` draws at: 32-bit words, and where the caller says
    `exact` past a float's 53 bits, 64-bit words, 128 and 300 bits."""
    return (64, 300, 32, 128, 53) if exact else (32,)  # the likeliest word first, then past all


def machine_edge(rng: random.Random, nonneg: bool, exact: bool, width: int | None = None) -> int:
    """A machine word's edge, or past it: 2**k + {-1, 0, 1} with k at `width` or one below
    it (a signed word), or 10**k + {-1, 0, 1} of that many bits; without `exact`, a 32-bit
    edge or 2**52 (- 1); signed where the argument may be."""
    width = width or rng.choice(widths(exact))
    if width == 32 and not exact:
        v = rng.choice((2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**52 - 1, 2**52))
    elif rng.random() < 0.7:
        v = 2 ** rng.choice((width, width - 1)) + rng.choice((0, 1, -1))
    else:
        v = 10 ** max(10, int(width / 3.3219)) + rng.choice((0, 1, -1))
    return -v if not nonneg and rng.random() < 0.3 else v


def big_square(rng: random.Random) -> int:
    """A square of 17 to 41 digits (past float exactness), or one off it; half the time of a prime."""
    k = rng.randint(10**8, 10**20)
    if rng.random() < 0.5:
        k = prime_at_most(k)
    return k * k + rng.choice((0, 0, 1, -1))


def big_squares(rng: random.Random) -> list[int]:
    """Every rung of the squares past float exactness: a square of 37 to 41 digits, the
    square of a prime of that size, one of them one off, and a square of 300 bits. A root
    searched by a loop with a step budget (Newton from n halves at first: 40 steps reach
    2**70) is wrong on the squares and right on their neighbours, so neither is left to a
    coin."""
    k = rng.randint(10**18, 10**20)
    p = prime_at_most(rng.randint(10**18, 10**20))
    w = rng.getrandbits(150) | (1 << 149)
    return [k * k, p * p, k * k + rng.choice((1, -1)), w * w]


def edge_list(rng: random.Random, nonneg: bool, exact: bool) -> list[int]:
    """Two to five integers of a fuzzer's dictionary: 0, +-1 and machine edges, for a list
    argument (a sentinel, a fingerprint modulo a word, a 32-bit accumulator is wrong on these)."""
    edges = [2**31 - 1, 2**32, 2**52]
    if exact:
        edges += [2**53 + 1, 2**61 - 1, 2**63 - 1, 2**64, 10**19]
    if not nonneg:
        edges += [-(2**31)] + ([-(2**63), -(10**19)] if exact else [-(2**52)])
    small = [0, 1] + ([] if nonneg else [-1])
    out = [rng.choice(edges), *rng.sample(edges + small, rng.randint(1, 4))]  # one edge at least
    rng.shuffle(out)
    return out


def past_edge_lists(rng: random.Random, nonneg: bool, exact: bool) -> list[list[int]]:
    """Lists whose every value is at or past one side of a word's edge (the signed 32-bit
    one; where the caller says `exact`, also the signed and unsigned 64-bit ones): a
    running maximum or minimum seeded with that edge as "nothing seen yet" takes them all
    for nothing. Three values a list, distinct, in no order."""
    out = []
    for w in (64, 32) if exact else (32,):
        top = 2 ** (w - 1) - 1
        sides = [[top + d for d in rng.sample(range(6), 3)]]
        if not nonneg:
            sides.append([-(top + 1) - d for d in rng.sample(range(6), 3)])
        if w == 64:
            sides.append([2**64 - 1 + d for d in rng.sample(range(6), 3)])
        for values in sides:
            rng.shuffle(values)
            out.append(values)
    return out


# moduli a fingerprint reduces by: machine words and the primes hashing and judges use
MODULI = (2**31 - 1, 2**32, 10**9 + 7, 998244353)
WIDE_MODULI = (2**61 - 1, 2**64)  # past float exactness: only where the caller says `exact`


def congruent_list(rng: random.Random, start: int, exact: bool) -> list[int]:
    """`start` and `start` plus each modulus of MODULI (and WIDE_MODULI where `exact`), in no
    order: distinct values that a fingerprint modulo any one of them calls equal."""
    values = [start, *(start + m for m in MODULI + (WIDE_MODULI if exact else ()))]
    rng.shuffle(values)
    return values


def congruent_pair(values: list[int]) -> bool:
    """Two distinct values of `values` congruent modulo one of MODULI or WIDE_MODULI."""
    distinct = set(values)
    return any(len({v % m for v in distinct}) < len(distinct) for m in MODULI + WIDE_MODULI)


def lopsided_pair(rng: random.Random) -> tuple[int, int]:
    """A small odd number and one of 1,001 bits: Euclid ends in a step, while a loop that
    shrinks the large one by a few bits a round (a binary gcd: about two a round) with a
    budget of rounds under ~450 is still far from done."""
    return rng.randrange(3, 100, 2), 2**1000 + rng.randrange(1, 2**20, 2)


def spread_list(values: list[int], rng: random.Random) -> list[int]:
    """Each of `values` raised by M (10**4 to 10**6), then each lowered by it: every pair of
    values appears once split between the two, with its sum kept, far from the values
    themselves (a sum's pairs looked for in a window around the examples' values, or an
    array indexed by value, miss them)."""
    m = rng.randint(10**4, 10**6)
    return [x + m for x in values] + [x - m for x in values]


def common_factor_pair(rng: random.Random) -> tuple[int, int]:
    """Two integers with a common factor of 2 to 60 and coprime cofactors past 50."""
    g = rng.randint(2, 60)
    while True:
        p, q = rng.randint(51, 400), rng.randint(51, 400)
        if p != q and math.gcd(p, q) == 1:
            return g * p, g * q


def is_pseudoprime(n: int) -> bool:
    """An odd composite that passes Fermat's test to base 2."""
    return n > 15 and n % 2 == 1 and pow(2, n - 1, n) == 1 and not is_prime(n)


def no_small_factor(n: int) -> bool:
    """A composite past TRIAL_CAP**2 with no prime factor up to TRIAL_CAP."""
    global _PRIMORIAL_CAP
    if n <= TRIAL_CAP * TRIAL_CAP or n.bit_length() > 128 or is_prime(n):
        return False
    if _PRIMORIAL_CAP is None:
        sieve = bytearray([1]) * (TRIAL_CAP + 1)
        sieve[:2] = b"\0\0"
        for i in range(2, math.isqrt(TRIAL_CAP) + 1):
            if sieve[i]:
                sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
        _PRIMORIAL_CAP = math.prod(i for i in range(TRIAL_CAP + 1) if sieve[i])
    return math.gcd(n, _PRIMORIAL_CAP) == 1


def consecutive_fibonacci(a: int, b: int) -> bool:
    """{a, b} = {F(k), F(k + 1)} for some k with F(k) past 10**6."""
    small, large = sorted((a, b))
    if small < 10**6:
        return False
    for sign in (4, -4):
        root = math.isqrt(5 * small * small + sign)
        if root * root == 5 * small * small + sign:  # small is a Fibonacci number
            return large == (small + root) // 2
    return False
