# What `loom python` runs as CPython does (isa-rv32im/tests/micropython.rs compares this script's output with
# features.out, which is CPython's): floats, f-strings, % and str.format, dicts, classes, exceptions, math.
import math

class Account:
    def __init__(self, owner, balance=0.0):
        self.owner, self.balance = owner, balance
    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(f"bad amount {amount}")
        self.balance += amount
        return self
    def __repr__(self):
        return "Account(%r, %.2f)" % (self.owner, self.balance)

a = Account("ada").deposit(12.5).deposit(0.25)
print(a, a.balance / 2, 7 / 2, 2 ** -3)
try:
    a.deposit(-1)
except ValueError as e:
    print("refused:", e)
prices = {"tea": 2.5, "cake": 3.75, "jam": 1.0}
for name, p in sorted(prices.items(), key=lambda kv: -kv[1]):
    print(f"{name:>6}|{p:6.2f}|{p * 3:<7.2f}|{int(p * 100):04d}")
total = sum(prices.values())
print("total {:.3f}, mean {:.4f}, max {}".format(total, total / len(prices), max(prices, key=prices.get)))
print("%5.1f%% of %d, %x, %-4s|%e" % (37.5, 80, 255, "ok", 1500.0))
print(math.sqrt(2.25), math.floor(-2.5), math.ceil(2.1), round(2.675, 1), abs(-0.5), float("1.25") * 4)
print([x / 4 for x in range(5)], 10 // 4, 10 % 4, -7 // 2, divmod(17, 5), 1e3, 3.0 == 3, int(7.9))
squares = {n: n * n for n in range(1, 6) if n % 2}
print(sorted(squares.items()), sorted(squares), 3 in squares, squares.get(4, "none"), len(squares))
