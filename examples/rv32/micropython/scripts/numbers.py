# Numbers as CPython prints them (isa-rv32im/tests/micropython.rs compares the output with numbers.out):
# integers of any size, single-precision floats where the value is exact in binary or formatted, math, struct.
import math, struct
from collections import namedtuple, OrderedDict

def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

print(fib(90), fib(90) % 1000003, 2**64 - 1, -(2**65) // 3, hex(2**40), int("123456789012345678901234567890") * 3)
print(math.factorial(20), math.gcd(462, 1071) if hasattr(math, "gcd") else 21, 7 ** 23 % 1000, pow(3, 200, 1009))
xs = [0.5, 1.25, -2.75, 8.0]
mean = sum(xs) / len(xs)
print(mean, min(xs), max(xs), sorted(xs, key=abs), [x * 2 for x in xs], abs(-2.75), -xs[2])
print(f"{math.sqrt(2):.4f} {math.pi:.3f} {math.e:.2f} {math.sin(math.pi / 2):.1f} {math.log10(1000):.1f} {math.atan2(1, 1) * 4:.3f}")
print(math.floor(-3.5), math.ceil(-3.5), round(2.5), round(3.5), round(-0.5), int(-3.9), math.trunc(3.9), float(7))
print("%.2f|%8.3f|%-8.2f|%e|%g|%g" % (1 / 3, 2.0 / 3, 10.25, 1234.5, 0.0001, 1e20))
print(struct.pack(">HhI", 513, -2, 65536), struct.unpack("<hH", b"\xff\xff\x01\x00"), struct.calcsize("<iHb"))
Point = namedtuple("Point", ["x", "y"])
p = Point(3, 4)
print(p, p.x * p.y, (p.x ** 2 + p.y ** 2) ** 0.5, p._replace(y=0) if hasattr(p, "_replace") else Point(3, 0))
od = OrderedDict()
for k in "zyx":
    od[k] = ord(k)
print(list(od.items()), divmod(-7, 2), divmod(7.5, 2), 1 / 4 + 1 / 4 == 0.5)
class Money:
    def __init__(self, cents):
        self.cents = cents
    def __add__(self, other):
        return Money(self.cents + other.cents)
    def __lt__(self, other):
        return self.cents < other.cents
    def __gt__(self, other):
        return self.cents > other.cents
    def __str__(self):
        return "$%d.%02d" % divmod(self.cents, 100)
wallet = [Money(250), Money(1999), Money(5)]
print(sum(wallet[1:], wallet[0]), min(wallet), max(wallet), sorted(wallet)[1])
for bad in ("1/0", "[][1]", "{}['k']", "int('x')", "None + 1"):
    try:
        eval(bad)
    except (ZeroDivisionError, IndexError, KeyError, ValueError, TypeError) as e:
        print(bad, "->", type(e).__name__, isinstance(e, Exception), isinstance(e, LookupError))
