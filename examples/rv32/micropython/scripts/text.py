# Text processing as CPython does it (isa-rv32im/tests/micropython.rs compares the output with text.out).
poem = """The woven machine reads a token,
writes a token, and the trace goes on:
no weight was trained, every weight was computed."""
words = [w.strip(",.:").lower() for w in poem.split()]
counts = {}
for w in words:
    counts[w] = counts.get(w, 0) + 1
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
print(len(words), len(counts), top)
print(" ".join(w[0].upper() + w[1:] for w in words[:5]), "|", "-".join(reversed(words[-3:])))
print([line.split()[0] for line in poem.splitlines()], poem.count("a "), poem.find("trace"))
table = [("ada", 36, 1815), ("grace", 85, 1906), ("alan", 41, 1912)]
for name, age, born in table:
    print(f"{name[0].upper() + name[1:]:<6}|{age:>4}|{born:^8}|{'*' * (age // 20)}")
print("%-8s%5d%%" % ("done", 100), "{:>6}|{:<6}|{:^6}|".format("r", "l", "c"), "%04d|%-4d|%+.1f" % (7, 7, 2.5))
def words_of(text):
    for line in text.splitlines():
        yield from line.split()
print(sum(1 for _ in words_of(poem)), max(words_of(poem), key=len), sorted(set(words))[:3])
s = "été, naïve café"
print(len(s), "cafe".upper(), "".join(reversed(list(s))), s.encode("utf-8")[:4], ord(s[0]), chr(233))
try:
    int("twelve")
except ValueError as e:
    print("not a number:", type(e).__name__)
print(repr("quote's"), str(b"bytes", "ascii"), "x,y,,z".split(","), "a-b-c".rsplit("-", 1))
