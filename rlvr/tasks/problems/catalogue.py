# ruff: noqa: E501  (the reference programs are data, kept as written)
"""The bundled stdin/stdout problems: each written once, a statement with its input and
output format, a seeded input generator for the build (edge cases first), a Python solver
that computes the expected output, and a reference program in C++ and in JavaScript.
`rlvr/tasks/generators/programgen.py` builds the task files from them; at run time the
`stdio_problem` drawer (registered here) draws a task's hidden tests: fresh inputs over
the problem's documented range (`fresh.FRESH`), expected outputs from its solver.
"""

from __future__ import annotations

import random
from collections import Counter

from rlvr.tasks.draws import NoDrawer, register_drawer
from rlvr.tasks.problems.fresh import EDGE, FRESH
from rlvr.tasks.problems.stdio import (
    _BRACKETS,
    _PHRASES,
    _WORDS,
    Problem,
    _balanced,
    _fizz,
    _gcd,
    _grid_gen,
    _ints,
    _islands,
    _kadane,
    _lines_gen,
    _lis,
    _maze_steps,
    _nums_input,
    _pairs,
    _primes,
    _rle,
    _transpose,
    _words_gen,
)
from rlvr.types import Task

PROBLEMS: list[Problem] = [
    Problem(
        "sum_numbers",
        1,
        "Read an integer n, then n integers. Print their sum.\n"
        "Input: the first line holds n (1 <= n <= 1000); the second line holds n integers, each between -10^9 and 10^9.\n"
        "Output: one line, the sum.",
        _nums_input([[5], [10**9, 10**9, 10**9]], -(10**9), 10**9, 50),
        lambda s: str(sum(_ints(s)[1:])),
        """#include <iostream>
int main() { int n; std::cin >> n; long long s = 0, x; for (int i = 0; i < n; ++i) { std::cin >> x; s += x; }
std::cout << s << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(BigInt);
let s = 0n; for (let i = 1; i <= Number(t[0]); i++) s += t[i];
console.log(s.toString());
""",
    ),
    Problem(
        "max_min",
        1,
        "Read an integer n, then n integers. Print the largest and the smallest, separated by one space.\n"
        "Input: n (1 <= n <= 1000) on the first line, the n integers on the second.\n"
        "Output: one line: the maximum, a space, the minimum.",
        _nums_input([[7], [-3, -3]], -1000, 1000, 30),
        lambda s: f"{max(_ints(s)[1:])} {min(_ints(s)[1:])}",
        """#include <iostream>
#include <vector>
#include <algorithm>
int main() { int n; std::cin >> n; std::vector<long long> a(n); for (auto& x : a) std::cin >> x;
std::cout << *std::max_element(a.begin(), a.end()) << " " << *std::min_element(a.begin(), a.end()) << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
const a = t.slice(1, 1 + t[0]);
console.log(Math.max(...a) + " " + Math.min(...a));
""",
    ),
    Problem(
        "reverse_words",
        1,
        "Read one line of words separated by single spaces. Print the words in reverse order, separated by single spaces.\n"
        "Input: one line with at least one word.\nOutput: one line.",
        _words_gen(_WORDS, 6, 8),
        lambda s: " ".join(reversed(s.split())),
        """#include <iostream>
#include <string>
#include <vector>
int main() { std::vector<std::string> w; std::string x; while (std::cin >> x) w.push_back(x);
for (size_t i = w.size(); i-- > 0;) std::cout << w[i] << (i ? " " : "\\n"); }
""",
        """const w = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/);
console.log(w.reverse().join(" "));
""",
    ),
    Problem(
        "count_vowels",
        1,
        "Read one line of text. Print how many of its characters are vowels (a, e, i, o, u, in either case).\n"
        "Input: one line (it may contain spaces and punctuation).\nOutput: one integer.",
        lambda r: [p + "\n" for p in r.sample(_PHRASES, 6)],
        lambda s: str(sum(ch in "aeiouAEIOU" for ch in s)),
        """#include <iostream>
#include <string>
int main() { std::string s, line; while (std::getline(std::cin, line)) s += line; int c = 0;
for (char ch : s) if (std::string("aeiouAEIOU").find(ch) != std::string::npos) ++c; std::cout << c << "\\n"; }
""",
        """const s = require("fs").readFileSync(0, "utf8");
console.log((s.match(/[aeiou]/gi) || []).length);
""",
    ),
    Problem(
        "fizzbuzz",
        1,
        "Read n. For each i from 1 to n print one line: FizzBuzz if i is divisible by 15, Fizz if by 3, Buzz if by 5, "
        "otherwise i.\nInput: n (1 <= n <= 100).\nOutput: n lines.",
        lambda r: ["1\n", "15\n"] + [f"{r.randint(2, 40)}\n" for _ in range(3)],
        lambda s: _fizz(int(s)),
        """#include <iostream>
int main() { int n; std::cin >> n; for (int i = 1; i <= n; ++i) {
if (i % 15 == 0) std::cout << "FizzBuzz\\n"; else if (i % 3 == 0) std::cout << "Fizz\\n";
else if (i % 5 == 0) std::cout << "Buzz\\n"; else std::cout << i << "\\n"; } }
""",
        """const n = Number(require("fs").readFileSync(0, "utf8").trim()); const out = [];
for (let i = 1; i <= n; i++) out.push(i % 15 === 0 ? "FizzBuzz" : i % 3 === 0 ? "Fizz" : i % 5 === 0 ? "Buzz" : String(i));
console.log(out.join("\\n"));
""",
    ),
    Problem(
        "run_length",
        1,
        "Read one word of lowercase letters. Print its run-length encoding: each maximal run of one letter becomes the "
        "letter followed by the run's length (aaabcc becomes a3b1c2).\nInput: one word.\nOutput: one line.",
        lambda r: (
            ["a\n", "zzzz\n"]
            + ["".join(r.choice("ab") * r.randint(1, 4) for _ in range(r.randint(1, 5))) + "\n" for _ in range(4)]
        ),
        lambda s: _rle(s.strip()),
        """#include <iostream>
#include <string>
int main() { std::string s; std::cin >> s; std::string out;
for (size_t i = 0; i < s.size();) { size_t j = i; while (j < s.size() && s[j] == s[i]) ++j;
out += s[i]; out += std::to_string(j - i); i = j; } std::cout << out << "\\n"; }
""",
        """const s = require("fs").readFileSync(0, "utf8").trim();
console.log((s.match(/(.)\\1*/g) || []).map((r) => r[0] + r.length).join(""));
""",
    ),
    Problem(
        "gcd_lcm",
        2,
        "Read two positive integers a and b. Print their greatest common divisor and their least common multiple, "
        "separated by one space.\nInput: a and b on one line (1 <= a, b <= 10^6).\nOutput: one line.",
        lambda r: ["1 1\n", "12 18\n"] + [f"{r.randint(1, 10**6)} {r.randint(1, 10**6)}\n" for _ in range(4)],
        lambda s: f"{_gcd(*_ints(s))} {_ints(s)[0] * _ints(s)[1] // _gcd(*_ints(s))}",
        """#include <iostream>
#include <numeric>
int main() { long long a, b; std::cin >> a >> b; long long g = std::gcd(a, b); std::cout << g << " " << a / g * b << "\\n"; }
""",
        """const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(BigInt);
const gcd = (x, y) => (y === 0n ? x : gcd(y, x % y)); const g = gcd(a, b);
console.log(g + " " + (a / g) * b);
""",
    ),
    Problem(
        "primes_up_to",
        2,
        "Read n. Print every prime number p with 2 <= p <= n, in increasing order, separated by single spaces "
        "(print an empty line when there is none).\nInput: n (1 <= n <= 10000).\nOutput: one line.",
        lambda r: ["1\n", "2\n"] + [f"{r.randint(3, 300)}\n" for _ in range(4)],
        lambda s: " ".join(map(str, _primes(int(s)))),
        """#include <iostream>
#include <vector>
int main() { int n; std::cin >> n; std::vector<bool> c(n + 1, false); bool first = true;
for (int i = 2; i <= n; ++i) { if (c[i]) continue; std::cout << (first ? "" : " ") << i; first = false;
for (long long j = 1LL * i * i; j <= n; j += i) c[j] = true; } std::cout << "\\n"; }
""",
        """const n = Number(require("fs").readFileSync(0, "utf8").trim()); const c = new Array(n + 1).fill(false); const p = [];
for (let i = 2; i <= n; i++) { if (c[i]) continue; p.push(i); for (let j = i * i; j <= n; j += i) c[j] = true; }
console.log(p.join(" "));
""",
    ),
    Problem(
        "palindromes",
        2,
        "Read t, then t lines. For each line print YES if it reads the same forwards and backwards when only its "
        "letters and digits are kept and case is ignored, otherwise NO.\nInput: t (1 <= t <= 20), then t lines.\n"
        "Output: t lines, YES or NO.",
        _lines_gen(_PHRASES, 5),
        lambda s: "\n".join(
            "YES" if (k := [c.lower() for c in ln if c.isalnum()]) == k[::-1] else "NO"
            for ln in s.split("\n")[1 : 1 + int(s.split("\n")[0])]
        ),
        """#include <iostream>
#include <string>
#include <cctype>
int main() { int t; std::cin >> t; std::string line; std::getline(std::cin, line);
while (t--) { std::getline(std::cin, line); std::string k;
for (char c : line) if (std::isalnum((unsigned char)c)) k += (char)std::tolower((unsigned char)c);
std::cout << (std::string(k.rbegin(), k.rend()) == k ? "YES" : "NO") << "\\n"; } }
""",
        """const lines = require("fs").readFileSync(0, "utf8").split("\\n"); const t = Number(lines[0]); const out = [];
for (let i = 1; i <= t; i++) { const k = lines[i].toLowerCase().replace(/[^a-z0-9]/g, "");
out.push(k === [...k].reverse().join("") ? "YES" : "NO"); }
console.log(out.join("\\n"));
""",
    ),
    Problem(
        "word_frequency",
        2,
        "Read one line of lowercase words separated by spaces. Print each distinct word and how many times it occurs, "
        "one per line as `word count`, most frequent first, ties in alphabetical order.\nInput: one line.\n"
        "Output: one line per distinct word.",
        _words_gen(_WORDS[:5], 6, 12),
        lambda s: "\n".join(f"{w} {c}" for w, c in sorted(Counter(s.split()).items(), key=lambda x: (-x[1], x[0]))),
        """#include <iostream>
#include <map>
#include <string>
#include <vector>
#include <algorithm>
int main() { std::map<std::string, int> c; std::string w; while (std::cin >> w) ++c[w];
std::vector<std::pair<std::string, int>> v(c.begin(), c.end());
std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
for (auto& [k, n] : v) std::cout << k << " " << n << "\\n"; }
""",
        """const w = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/); const c = new Map();
for (const x of w) c.set(x, (c.get(x) || 0) + 1);
const v = [...c].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
console.log(v.map(([k, n]) => k + " " + n).join("\\n"));
""",
    ),
    Problem(
        "prefix_sums",
        2,
        "Read n, then n integers. Print the running totals: the i-th number printed is the sum of the first i "
        "integers, separated by single spaces.\nInput: n (1 <= n <= 1000), then n integers between -10^6 and 10^6.\n"
        "Output: one line.",
        _nums_input([[0], [-1, 1, -1]], -(10**6), 10**6, 20),
        lambda s: " ".join(str(sum(_ints(s)[1 : i + 2])) for i in range(_ints(s)[0])),
        """#include <iostream>
int main() { int n; std::cin >> n; long long s = 0, x;
for (int i = 0; i < n; ++i) { std::cin >> x; s += x; std::cout << (i ? " " : "") << s; } std::cout << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number); let s = 0; const out = [];
for (let i = 1; i <= t[0]; i++) { s += t[i]; out.push(s); }
console.log(out.join(" "));
""",
    ),
    Problem(
        "binary",
        2,
        "Read t, then t non-negative integers, one per line. Print each in binary (no leading zeros; 0 is printed as 0), "
        "one per line.\nInput: t (1 <= t <= 50), then t integers below 2^31.\nOutput: t lines.",
        lambda r: (
            ["1\n0\n", "2\n1\n2147483647\n"]
            + [
                f"{k}\n" + "\n".join(str(r.randint(0, 5000)) for _ in range(k)) + "\n"
                for k in (r.randint(1, 6) for _ in range(4))
            ]
        ),
        lambda s: "\n".join(bin(x)[2:] for x in _ints(s)[1:]),
        """#include <iostream>
#include <string>
int main() { int t; std::cin >> t; while (t--) { long long x; std::cin >> x; std::string b;
do { b = char('0' + x % 2) + b; x /= 2; } while (x > 0); std::cout << b << "\\n"; } }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
console.log(t.slice(1, 1 + t[0]).map((x) => x.toString(2)).join("\\n"));
""",
    ),
    Problem(
        "sort_by_length",
        2,
        "Read one line of words. Print the words sorted by length, shortest first, words of equal length in "
        "order of their character codes (so capitals come before lower-case letters: B before a), separated "
        "by single spaces.\nInput: one line.\nOutput: one line.",
        _words_gen(_WORDS, 6, 8),
        lambda s: " ".join(sorted(s.split(), key=lambda w: (len(w), w))),
        """#include <iostream>
#include <string>
#include <vector>
#include <algorithm>
int main() { std::vector<std::string> w; std::string x; while (std::cin >> x) w.push_back(x);
std::sort(w.begin(), w.end(), [](auto& a, auto& b) { return a.size() != b.size() ? a.size() < b.size() : a < b; });
for (size_t i = 0; i < w.size(); ++i) std::cout << (i ? " " : "") << w[i]; std::cout << "\\n"; }
""",
        """const w = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/);
w.sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
console.log(w.join(" "));
""",
    ),
    Problem(
        "longest_increasing",
        3,
        "Read n, then n integers. Print the length of the longest strictly increasing subsequence (not necessarily "
        "contiguous).\nInput: n (1 <= n <= 10^5), then n integers.\nOutput: one integer.",
        _nums_input([[4], [3, 3, 3], [5, 4, 3, 2, 1]], -50, 50, 25),
        lambda s: str(_lis(_ints(s)[1:])),
        """#include <iostream>
#include <vector>
#include <algorithm>
int main() { int n; std::cin >> n; std::vector<long long> d;
for (int i = 0; i < n; ++i) { long long x; std::cin >> x; auto it = std::lower_bound(d.begin(), d.end(), x);
if (it == d.end()) d.push_back(x); else *it = x; } std::cout << d.size() << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number); const d = [];
for (let i = 1; i <= t[0]; i++) { let lo = 0, hi = d.length; while (lo < hi) { const m = (lo + hi) >> 1; if (d[m] < t[i]) lo = m + 1; else hi = m; }
d[lo] = t[i]; }
console.log(d.length);
""",
    ),
    Problem(
        "max_subarray",
        3,
        "Read n, then n integers. Print the largest sum of a non-empty contiguous run of them.\n"
        "Input: n (1 <= n <= 10^5), then n integers between -10^4 and 10^4.\nOutput: one integer.",
        _nums_input([[-5], [-3, -1, -2], [2, -1, 2]], -20, 20, 25),
        lambda s: str(_kadane(_ints(s)[1:])),
        """#include <iostream>
#include <algorithm>
int main() { int n; std::cin >> n; long long x; std::cin >> x; long long best = x, cur = x;
for (int i = 1; i < n; ++i) { std::cin >> x; cur = std::max(x, cur + x); best = std::max(best, cur); }
std::cout << best << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number); let best = t[1], cur = t[1];
for (let i = 2; i <= t[0]; i++) { cur = Math.max(t[i], cur + t[i]); best = Math.max(best, cur); }
console.log(best);
""",
    ),
    Problem(
        "balanced_brackets",
        3,
        "Read t, then t lines. For each line print YES if its brackets (), [] and {} are balanced and properly nested "
        "(other characters are ignored), otherwise NO. An empty line is balanced.\nInput: t (1 <= t <= 20), then t "
        "lines.\nOutput: t lines.",
        _lines_gen(_BRACKETS, 5),
        lambda s: "\n".join("YES" if _balanced(ln) else "NO" for ln in s.split("\n")[1 : 1 + int(s.split("\n")[0])]),
        """#include <iostream>
#include <string>
int main() { int t; std::cin >> t; std::string line; std::getline(std::cin, line);
while (t--) { std::getline(std::cin, line); std::string st; bool ok = true;
for (char c : line) { if (c == '(' || c == '[' || c == '{') st += c;
else if (c == ')' || c == ']' || c == '}') { char o = c == ')' ? '(' : c == ']' ? '[' : '{';
if (st.empty() || st.back() != o) { ok = false; break; } st.pop_back(); } }
std::cout << (ok && st.empty() ? "YES" : "NO") << "\\n"; } }
""",
        """const lines = require("fs").readFileSync(0, "utf8").split("\\n"); const t = Number(lines[0]); const out = [];
const open = { ")": "(", "]": "[", "}": "{" };
for (let i = 1; i <= t; i++) { const st = []; let ok = true;
for (const c of lines[i] || "") { if ("([{".includes(c)) st.push(c); else if (c in open) { if (st.pop() !== open[c]) { ok = false; break; } } }
out.push(ok && st.length === 0 ? "YES" : "NO"); }
console.log(out.join("\\n"));
""",
    ),
    Problem(
        "count_islands",
        3,
        "Read a grid of '#' (land) and '.' (water). Print the number of islands: groups of land cells connected "
        "horizontally or vertically.\nInput: r and c on the first line (1 <= r, c <= 50), then r lines of c "
        "characters.\nOutput: one integer.",
        _grid_gen("islands"),
        lambda s: str(_islands(s)),
        """#include <iostream>
#include <string>
#include <vector>
int main() { int r, c; std::cin >> r >> c; std::vector<std::string> g(r); for (auto& row : g) std::cin >> row; int n = 0;
for (int i = 0; i < r; ++i) for (int j = 0; j < c; ++j) if (g[i][j] == '#') { ++n; std::vector<std::pair<int, int>> st{{i, j}}; g[i][j] = '.';
while (!st.empty()) { auto [y, x] = st.back(); st.pop_back(); int dy[] = {1, -1, 0, 0}, dx[] = {0, 0, 1, -1};
for (int k = 0; k < 4; ++k) { int ny = y + dy[k], nx = x + dx[k];
if (ny >= 0 && ny < r && nx >= 0 && nx < c && g[ny][nx] == '#') { g[ny][nx] = '.'; st.push_back({ny, nx}); } } } }
std::cout << n << "\\n"; }
""",
        """const lines = require("fs").readFileSync(0, "utf8").split("\\n"); const [r, c] = lines[0].split(" ").map(Number);
const g = lines.slice(1, 1 + r).map((l) => l.split("")); let n = 0;
for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) if (g[i][j] === "#") { n++; const st = [[i, j]]; g[i][j] = ".";
while (st.length) { const [y, x] = st.pop(); for (const [dy, dx] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) { const ny = y + dy, nx = x + dx;
if (ny >= 0 && ny < r && nx >= 0 && nx < c && g[ny][nx] === "#") { g[ny][nx] = "."; st.push([ny, nx]); } } } }
console.log(n);
""",
    ),
    Problem(
        "maze_steps",
        3,
        "Read a maze: '.' is open, '#' is a wall, S the start and E the exit. Moving one cell up, down, left or right "
        "is one step. Print the fewest steps from S to E, or -1 if E cannot be reached.\nInput: r and c on the first "
        "line (1 <= r, c <= 50), then r lines of c characters.\nOutput: one integer.",
        _grid_gen("maze"),
        lambda s: str(_maze_steps(s)),
        """#include <iostream>
#include <string>
#include <vector>
#include <queue>
int main() { int r, c; std::cin >> r >> c; std::vector<std::string> g(r); for (auto& row : g) std::cin >> row;
std::vector<std::vector<int>> d(r, std::vector<int>(c, -1)); std::queue<std::pair<int, int>> q;
for (int i = 0; i < r; ++i) for (int j = 0; j < c; ++j) if (g[i][j] == 'S') { d[i][j] = 0; q.push({i, j}); }
while (!q.empty()) { auto [y, x] = q.front(); q.pop(); if (g[y][x] == 'E') { std::cout << d[y][x] << "\\n"; return 0; }
int dy[] = {1, -1, 0, 0}, dx[] = {0, 0, 1, -1}; for (int k = 0; k < 4; ++k) { int ny = y + dy[k], nx = x + dx[k];
if (ny >= 0 && ny < r && nx >= 0 && nx < c && g[ny][nx] != '#' && d[ny][nx] < 0) { d[ny][nx] = d[y][x] + 1; q.push({ny, nx}); } } }
std::cout << -1 << "\\n"; }
""",
        """const lines = require("fs").readFileSync(0, "utf8").split("\\n"); const [r, c] = lines[0].split(" ").map(Number);
const g = lines.slice(1, 1 + r); const d = g.map((row) => new Array(c).fill(-1)); const q = [];
for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) if (g[i][j] === "S") { d[i][j] = 0; q.push([i, j]); }
let ans = -1;
for (let h = 0; h < q.length; h++) { const [y, x] = q[h]; if (g[y][x] === "E") { ans = d[y][x]; break; }
for (const [dy, dx] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) { const ny = y + dy, nx = x + dx;
if (ny >= 0 && ny < r && nx >= 0 && nx < c && g[ny][nx] !== "#" && d[ny][nx] < 0) { d[ny][nx] = d[y][x] + 1; q.push([ny, nx]); } } }
console.log(ans);
""",
    ),
    Problem(
        "pair_count",
        3,
        "Read n and a target k, then n integers. Print how many pairs of positions i < j have a_i + a_j = k.\n"
        "Input: n and k on the first line (1 <= n <= 10^5), then n integers between -1000 and 1000.\nOutput: one integer.",
        lambda r: (
            ["1 2\n1\n", "4 4\n2 2 2 2\n"]
            + [
                f"{n} {r.randint(-5, 5)}\n" + " ".join(str(r.randint(-5, 5)) for _ in range(n)) + "\n"
                for n in (r.randint(2, 20) for _ in range(4))
            ]
        ),
        lambda s: str(_pairs(_ints(s)[2:], _ints(s)[1])),
        """#include <iostream>
#include <unordered_map>
int main() { int n; long long k; std::cin >> n >> k; std::unordered_map<long long, long long> seen; long long pairs = 0;
for (int i = 0; i < n; ++i) { long long x; std::cin >> x; auto it = seen.find(k - x); if (it != seen.end()) pairs += it->second; ++seen[x]; }
std::cout << pairs << "\\n"; }
""",
        """const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number); const [n, k] = t; const seen = new Map(); let pairs = 0;
for (let i = 2; i < 2 + n; i++) { pairs += seen.get(k - t[i]) || 0; seen.set(t[i], (seen.get(t[i]) || 0) + 1); }
console.log(pairs);
""",
    ),
    Problem(
        "matrix_transpose",
        2,
        "Read a matrix and print its transpose.\nInput: r and c on the first line (1 <= r, c <= 20), then r lines of c "
        "integers.\nOutput: c lines of r integers separated by single spaces.",
        lambda r: (
            ["1 1\n7\n", "1 3\n1 2 3\n"]
            + [
                f"{a} {b}\n" + "\n".join(" ".join(str(r.randint(-9, 9)) for _ in range(b)) for _ in range(a)) + "\n"
                for a, b in ((r.randint(1, 5), r.randint(1, 5)) for _ in range(4))
            ]
        ),
        lambda s: _transpose(s),
        """#include <iostream>
#include <vector>
int main() { int r, c; std::cin >> r >> c; std::vector<std::vector<long long>> m(r, std::vector<long long>(c));
for (auto& row : m) for (auto& x : row) std::cin >> x;
for (int j = 0; j < c; ++j) { for (int i = 0; i < r; ++i) std::cout << (i ? " " : "") << m[i][j]; std::cout << "\\n"; } }
""",
        """const lines = require("fs").readFileSync(0, "utf8").trim().split("\\n"); const [r, c] = lines[0].split(/\\s+/).map(Number);
const m = lines.slice(1, 1 + r).map((l) => l.trim().split(/\\s+/)); const out = [];
for (let j = 0; j < c; j++) out.push(m.map((row) => row[j]).join(" "));
console.log(out.join("\\n"));
""",
    ),
]

BY_NAME = {p.name: p for p in PROBLEMS}
if set(BY_NAME) != set(FRESH):
    raise RuntimeError(f"fresh.FRESH and PROBLEMS disagree: {sorted(set(BY_NAME) ^ set(FRESH))}")


@register_drawer("stdio_problem")
def draw(task: Task, name: str, rng: random.Random, n: int) -> list[dict[str, str]]:
    """Hidden tests (`metadata.draw: stdio_problem:NAME`): fresh inputs over the problem's
    documented range (`fresh.FRESH`) and at its largest sizes (`fresh.EDGE`), expected
    outputs from its Python solver."""
    if name not in BY_NAME:
        raise NoDrawer(f"task {task.id}: field 'metadata.draw': no bundled problem '{name}'")
    p = BY_NAME[name]
    edges = [make(rng) for make in EDGE.get(name, [])]  # first: each is kept (one answer each)
    inputs = list(dict.fromkeys(edges + [FRESH[name](rng) for _ in range(2 * n)]))
    return [{"stdin": s, "stdout": p.solve(s).rstrip() + "\n"} for s in inputs]
