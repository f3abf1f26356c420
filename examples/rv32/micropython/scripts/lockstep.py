# The script of the MicroPython lockstep check (docs/benchmarks.md): compiling and running it takes the
# firmware about 160,000 instructions (start-up, the lexer, parser, compiler and the MPZ big integers).
x = 2**100
print(x, x * x + 1)
