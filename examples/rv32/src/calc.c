/* calc: the calculator firmware of `loom chat`'s `calc` tool. Reads one arithmetic expression on standard input
   and prints its exact value on one line.

   Numbers: signed integers and decimals of up to MAX_DIGITS digits. Operators: + - * / and parentheses, the
   signs × ÷ −, and the word forms of DeepMind's mul_big questions ("What is a times b?", "Calculate a*b.",
   "Multiply a and b.", "Product of a and b.", "a divided by b", "sum of a and b"). Sums, differences and
   products are exact; a quotient is exact when it ends within DIV_DIGITS digits after the point, else it is
   rounded half away from zero to DIV_DIGITS digits. Values print without trailing zeros ("41865.79725", "-2").

   The input may be the body of a Qwen3.5 tool call, `<function=calc>\n<parameter=expression>\nEXPR\n</parameter>
   \n</function>`: the value of its `expression` parameter is the expression. Errors print `error: ...` and exit
   with status 1.

   Numbers are base-10^4 limbs split with multiply-high by a reciprocal: the woven RV32 spends 67 machine steps
   on a DIV and one on a MUL, and every step is a forward pass. */
#include "rt.h"
#include <stdint.h>
#include <string.h>

#define LIMBS 100 /* base-10^4 limbs per number */
#define MAX_DIGITS (4 * LIMBS)
#define DIV_DIGITS 20
#define INPUT_MAX 4096
#define MAX_DEPTH 16

/* value = (-1)^neg * sum(d[i] * 10^(4i)) / 10^scale; n limbs in use, d[n-1] != 0; zero has n = 0, neg = 0. */
typedef struct {
    int neg;
    int scale;
    int n;
    uint16_t d[LIMBS];
} num;

/* Ends the line of an error message and exits with status 1. */
static __attribute__((noreturn)) void die(void) {
    put_str("\n");
    register long a0 __asm__("a0") = 1;
    register long a7 __asm__("a7") = 93;
    for (;;) __asm__ volatile("ecall" : : "r"(a0), "r"(a7));
}

/* Prints `error: WHAT` and `len` bytes of `detail`, exits with status 1. */
static __attribute__((noreturn)) void fail(const char *what, const char *detail, size_t len) {
    put_str("error: ");
    put_str(what);
    if (detail) sys_write(1, detail, len);
    die();
}

static long sys_read(int fd, void *buf, size_t len) {
    register long a0 __asm__("a0") = fd;
    register long a1 __asm__("a1") = (long)buf;
    register long a2 __asm__("a2") = (long)len;
    register long a7 __asm__("a7") = 63;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
    return a0;
}

/* x / 10000 for any 32-bit x (multiply-high by ceil(2^45 / 10^4), as compilers do at -O2). */
static inline uint32_t div10k(uint32_t x) { return (uint32_t)(((uint64_t)x * 0xD1B71759u) >> 45); }
/* x / 10 for any 32-bit x. */
static inline uint32_t div10(uint32_t x) { return (uint32_t)(((uint64_t)x * 0xCCCCCCCDu) >> 35); }

static void trim(num *a) {
    while (a->n > 0 && a->d[a->n - 1] == 0) a->n--;
    if (a->n == 0) a->neg = 0;
}

static __attribute__((noreturn)) void too_long(void) { fail("a number has more than 400 digits", 0, 0); }

/* *dst = *src, the limbs in use only (a whole-struct copy is a byte loop of 212 bytes). */
static void copy(num *dst, const num *src) {
    dst->neg = src->neg, dst->scale = src->scale, dst->n = src->n;
    for (int i = 0; i < src->n; i++) dst->d[i] = src->d[i];
}

/* |a| *= 10^k (k >= 0). */
static void shift_up(num *a, int k) {
    int limbs = k >> 2, r = k & 3;
    if (a->n == 0) return;
    if (a->n + limbs + 1 > LIMBS) too_long();
    if (limbs) {
        for (int i = a->n - 1; i >= 0; i--) a->d[i + limbs] = a->d[i];
        for (int i = 0; i < limbs; i++) a->d[i] = 0;
        a->n += limbs;
    }
    if (r) {
        uint32_t p = r == 1 ? 10 : r == 2 ? 100 : 1000, carry = 0;
        for (int i = 0; i < a->n; i++) {
            uint32_t t = a->d[i] * p + carry;
            carry = div10k(t);
            a->d[i] = (uint16_t)(t - carry * 10000);
        }
        if (carry) a->d[a->n++] = (uint16_t)carry;
    }
}

static int cmp_mag(const num *a, const num *b) {
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

/* r = |a| + |b| (r may be a or b). */
static void add_mag(num *r, const num *a, const num *b) {
    int n = a->n > b->n ? a->n : b->n;
    uint32_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint32_t t = (i < a->n ? a->d[i] : 0) + (i < b->n ? b->d[i] : 0) + carry;
        carry = t >= 10000;
        r->d[i] = (uint16_t)(carry ? t - 10000 : t);
    }
    if (carry) {
        if (n == LIMBS) too_long();
        r->d[n++] = 1;
    }
    r->n = n;
}

/* r = |a| - |b|, |a| >= |b| (r may be a or b). */
static void sub_mag(num *r, const num *a, const num *b) {
    int32_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        int32_t t = (int32_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        borrow = t < 0;
        r->d[i] = (uint16_t)(borrow ? t + 10000 : t);
    }
    r->n = a->n;
    trim(r);
}

static void align(num *a, num *b) {
    if (a->scale < b->scale) shift_up(a, b->scale - a->scale), a->scale = b->scale;
    if (b->scale < a->scale) shift_up(b, a->scale - b->scale), b->scale = a->scale;
}

/* a += (negate ? -b : b); b is scaled to a's scale. */
static void add(num *a, num *b, int negate) {
    int bneg = b->neg ^ (negate && b->n);
    align(a, b);
    if (a->neg == bneg) {
        add_mag(a, a, b);
    } else if (cmp_mag(a, b) >= 0) {
        sub_mag(a, a, b);
    } else {
        sub_mag(a, b, a);
        a->neg = bneg;
    }
    trim(a);
}

/* a *= b. */
static void mul(num *a, const num *b) {
    static uint32_t acc[2 * LIMBS];
    if (a->n + b->n > LIMBS) too_long();
    int n = a->n + b->n;
    for (int i = 0; i < n; i++) acc[i] = 0;
    for (int i = 0; i < a->n; i++) {
        uint32_t carry = 0, ai = a->d[i];
        for (int j = 0; j < b->n; j++) {
            uint32_t t = acc[i + j] + ai * b->d[j] + carry;
            carry = div10k(t);
            acc[i + j] = t - carry * 10000;
        }
        acc[i + b->n] = carry;
    }
    for (int i = 0; i < n; i++) a->d[i] = (uint16_t)acc[i];
    a->n = n;
    a->neg ^= b->neg;
    a->scale += b->scale;
    trim(a);
}

/* "00" .. "99". */
static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                            "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                            "8081828384858687888990919293949596979899";

/* The decimal digits of |a| ('0'..'9', most significant first, no leading zeros; "" for zero). */
static int digits_of(const num *a, char *out) {
    int len = 0;
    for (int i = a->n - 1; i >= 0; i--) {
        uint32_t v = a->d[i], hi = (uint32_t)((v * 0x147Bu) >> 19); /* v / 100 for v < 10^4 */
        const char *h = pairs + 2 * hi, *l = pairs + 2 * (v - hi * 100);
        char g[4] = {h[0], h[1], l[0], l[1]};
        for (int k = 0; k < 4; k++)
            if (len || g[k] != '0') out[len++] = g[k];
    }
    return len;
}

/* |a| = the decimal digits s[0..len) (most significant first). */
static void from_digits(num *a, const char *s, int len) {
    while (len > 0 && *s == '0') s++, len--;
    if (len > MAX_DIGITS) too_long();
    a->n = 0;
    for (int end = len; end > 0; end -= 4) {
        uint32_t v = 0;
        for (int k = end > 4 ? end - 4 : 0; k < end; k++) v = v * 10 + (uint32_t)(s[k] - '0');
        a->d[a->n++] = (uint16_t)v;
    }
    trim(a);
}

/* a /= b: exact if the quotient ends within DIV_DIGITS digits after the point, else rounded half away from zero
   there. Long division of |a| * 10^k by |b|, one decimal digit at a time; b is scaled on the way. */
static void divide(num *a, num *b) {
    static char n_digits[2 * MAX_DIGITS + DIV_DIGITS + 8], q_digits[2 * MAX_DIGITS + DIV_DIGITS + 8];
    if (b->n == 0) fail("division by zero", 0, 0);
    int neg = a->neg ^ b->neg;
    int k = DIV_DIGITS + 1 + b->scale - a->scale;
    if (k < 0) shift_up(b, -k), k = 0;
    if (a->n * 4 + k > (int)sizeof n_digits - 1) too_long();
    int len = digits_of(a, n_digits);
    for (int i = 0; i < k; i++) n_digits[len++] = '0';
    num r;
    r.neg = 0, r.scale = 0, r.n = 0;
    b->neg = 0;
    int qlen = 0;
    for (int i = 0; i < len; i++) {
        shift_up(&r, 1);
        if (r.n == 0 && n_digits[i] != '0') r.n = 1, r.d[0] = 0;
        r.d[0] = (uint16_t)(r.d[0] + (n_digits[i] - '0'));
        int q = 0;
        while (cmp_mag(&r, b) >= 0) sub_mag(&r, &r, b), q++;
        q_digits[qlen++] = (char)('0' + q);
    }
    /* Round away the last digit. */
    int up = qlen > 0 && q_digits[qlen - 1] >= '5';
    qlen--;
    for (int i = qlen - 1; up && i >= 0; i--) {
        if (q_digits[i] == '9') {
            q_digits[i] = '0';
        } else {
            q_digits[i]++;
            up = 0;
        }
    }
    if (up) {
        for (int i = qlen; i > 0; i--) q_digits[i] = q_digits[i - 1];
        q_digits[0] = '1';
        qlen++;
    }
    from_digits(a, q_digits, qlen > 0 ? qlen : 0);
    a->scale = DIV_DIGITS;
    a->neg = neg && a->n;
}

/* ---- The expression: lexer and recursive-descent parser. ---- */

enum tok { T_END, T_NUM, T_PLUS, T_MINUS, T_MUL, T_DIV, T_LP, T_RP, T_AND, T_BY, T_PRODUCT, T_SUM, T_MULTIPLY, T_DIVIDE };

static const char *src, *src_end, *tok_start;
static enum tok tok;
static num tok_num;
static int depth;

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* The words of the expression: operators, the parts of "product of a and b" and friends, and fillers (-1). */
struct word {
    const char *text;
    int len, tok;
};
#define W(s, t) {s, sizeof s - 1, t}
static const struct word words[] = {
    W("times", T_MUL), W("multiplied", T_MUL), W("plus", T_PLUS), W("minus", T_MINUS), W("divided", T_DIV),
    W("over", T_DIV), W("and", T_AND), W("by", T_BY), W("product", T_PRODUCT), W("sum", T_SUM),
    W("multiply", T_MULTIPLY), W("divide", T_DIVIDE), W("what", -1), W("is", -1), W("calculate", -1),
    W("compute", -1), W("evaluate", -1), W("work", -1), W("out", -1), W("the", -1), W("of", -1), W("value", -1),
    W("please", -1), W("find", -1), W("give", -1), W("me", -1), W("result", -1), W("answer", -1), {0, 0, 0},
};

static void next(void) {
    static char digits[MAX_DIGITS + 2];
    for (;;) {
        while (src < src_end && (*src == ' ' || *src == '\t' || *src == '\n' || *src == '\r' || *src == '?' || *src == '=' || *src == ':' || *src == ',')) src++;
        tok_start = src;
        if (src >= src_end) {
            tok = T_END;
            return;
        }
        char c = *src;
        if (is_digit(c) || (c == '.' && src + 1 < src_end && is_digit(src[1]))) {
            int len = 0, scale = 0, frac = 0;
            for (; src < src_end; src++) {
                if (is_digit(*src)) {
                    if (len == MAX_DIGITS + 1) too_long();
                    digits[len++] = *src;
                    scale += frac;
                } else if (*src == '.' && !frac && src + 1 < src_end && is_digit(src[1])) {
                    frac = 1;
                } else if (*src == '_') {
                    /* digit separator */
                } else {
                    break;
                }
            }
            from_digits(&tok_num, digits, len);
            tok_num.scale = scale;
            tok = T_NUM;
            return;
        }
        src++;
        switch (c) {
        case '+': tok = T_PLUS; return;
        case '-': tok = T_MINUS; return;
        case '*': tok = T_MUL; return;
        case '/': tok = T_DIV; return;
        case '(': tok = T_LP; return;
        case ')': tok = T_RP; return;
        case '.': continue; /* the full stop after a question */
        }
        /* × (C3 97), ÷ (C3 B7), − (E2 88 92) */
        if ((unsigned char)c == 0xC3 && src < src_end && ((unsigned char)*src == 0x97 || (unsigned char)*src == 0xB7)) {
            tok = (unsigned char)*src++ == 0x97 ? T_MUL : T_DIV;
            return;
        }
        if ((unsigned char)c == 0xE2 && src + 1 < src_end && (unsigned char)src[0] == 0x88 && (unsigned char)src[1] == 0x92) {
            src += 2;
            tok = T_MINUS;
            return;
        }
        if (lower(c) >= 'a' && lower(c) <= 'z') {
            char w[16];
            int len = 0;
            for (src--; src < src_end && lower(*src) >= 'a' && lower(*src) <= 'z'; src++)
                if (len < (int)sizeof w) w[len++] = lower(*src);
            for (const struct word *k = words; k->len; k++) {
                if (k->len != len || memcmp(k->text, w, (size_t)len) != 0) continue;
                if (k->tok < 0) goto skip; /* a filler word */
                tok = (enum tok)k->tok;
                return;
            }
            fail("unknown word: ", tok_start, (size_t)(src - tok_start));
        }
        fail("unexpected character: ", tok_start, 1);
    skip:;
    }
}

static void expr(num *r);

/* `error: WHAT at: TEXT` (up to 24 bytes of the text from the current token), or `at the end of the expression`. */
static __attribute__((noreturn)) void expected(const char *what) {
    put_str("error: ");
    put_str(what);
    if (tok == T_END) {
        put_str(" at the end of the expression");
    } else {
        const char *e = tok_start;
        while (e < src_end && *e != '\n' && e - tok_start < 24) e++;
        put_str(" at: ");
        sys_write(1, tok_start, (size_t)(e - tok_start));
    }
    die();
}

/* `a (and|by) b` after `product of`, `multiply`, ... */
static void two_operands(num *a, num *b, int by_ok) {
    expr(a);
    if (tok != T_AND && !(by_ok && tok == T_BY)) expected(by_ok ? "expected 'and' or 'by'" : "expected 'and'");
    next();
    expr(b);
}

static void factor(num *r) {
    num b;
    if (tok == T_MINUS || tok == T_PLUS) {
        int neg = tok == T_MINUS;
        next();
        factor(r);
        if (neg && r->n) r->neg ^= 1;
        return;
    }
    if (++depth > MAX_DEPTH) fail("the expression is nested too deeply", 0, 0);
    switch (tok) {
    case T_NUM:
        copy(r, &tok_num);
        next();
        break;
    case T_LP:
        next();
        expr(r);
        if (tok != T_RP) expected("expected ')'");
        next();
        break;
    case T_PRODUCT: next(); two_operands(r, &b, 0); mul(r, &b); break;
    case T_MULTIPLY: next(); two_operands(r, &b, 1); mul(r, &b); break;
    case T_SUM: next(); two_operands(r, &b, 0); add(r, &b, 0); break;
    case T_DIVIDE:
        next();
        expr(r);
        if (tok != T_BY) expected("expected 'by'");
        next();
        expr(&b);
        divide(r, &b);
        break;
    default: expected("expected a number");
    }
    depth--;
}

static void term(num *r) {
    num b;
    factor(r);
    while (tok == T_MUL || tok == T_DIV) {
        enum tok op = tok;
        next();
        if (tok == T_BY) next(); /* multiplied by, divided by */
        factor(&b);
        if (op == T_MUL) mul(r, &b);
        else divide(r, &b);
    }
}

static void expr(num *r) {
    num b;
    term(r);
    while (tok == T_PLUS || tok == T_MINUS) {
        int negate = tok == T_MINUS;
        next();
        term(&b);
        add(r, &b, negate);
    }
}

/* The first occurrence of `pat` (which starts with '<') in [p, end), or 0. */
static const char *find_tag(const char *p, const char *end, const char *pat) {
    size_t n = strlen(pat);
    for (; p + n <= end; p++)
        if (*p == '<' && memcmp(p, pat, n) == 0) return p;
    return 0;
}

/* The expression parameter's value when the input is a tool call's body, else the whole input. */
static void find_expression(const char *in, int len) {
    static const char open[] = "<parameter=expression>";
    src = in, src_end = in + len;
    while (src < src_end && (*src == ' ' || *src == '\n' || *src == '\r' || *src == '\t')) src++;
    if (src == src_end || *src != '<') return; /* a bare expression */
    const char *p = find_tag(src, src_end, open);
    if (!p) {
        if (find_tag(src, src_end, "<parameter=") || find_tag(src, src_end, "<function=")) fail("calc takes one parameter, expression", 0, 0);
        return;
    }
    src = p + sizeof open - 1;
    const char *e = find_tag(src, src_end, "</parameter>");
    if (e) src_end = e;
}

int main(void) {
    static char in[INPUT_MAX + 1];
    int len = 0;
    for (;;) {
        long got = sys_read(0, in + len, (size_t)(INPUT_MAX - len));
        if (got <= 0) break;
        len += (int)got;
        if (len == INPUT_MAX) fail("the expression is longer than 4096 bytes", 0, 0);
    }
    in[len] = 0;
    find_expression(in, len);
    next();
    if (tok == T_END) fail("no expression", 0, 0);
    num r;
    expr(&r);
    if (tok != T_END) expected("unexpected text");
    /* Print: sign, integer part, point and fraction without trailing zeros. */
    static char digits[MAX_DIGITS + 1], out[MAX_DIGITS + 8];
    int n = digits_of(&r, digits), scale = r.scale, o = 0;
    while (scale > 0 && n > 0 && digits[n - 1] == '0') n--, scale--;
    if (n == 0) scale = 0;
    if (r.neg && n) out[o++] = '-';
    if (n <= scale) {
        out[o++] = '0';
    } else {
        for (int i = 0; i < n - scale; i++) out[o++] = digits[i];
    }
    if (scale > 0) {
        out[o++] = '.';
        for (int i = n - scale; i < n; i++) out[o++] = i < 0 ? '0' : digits[i];
    }
    out[o++] = '\n';
    sys_write(1, out, (size_t)o);
    return 0;
}
