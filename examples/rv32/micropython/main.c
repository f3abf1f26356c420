/* MicroPython on the RV32IM machine. Standard input (read(2) on fd 0) is either a script, read to its end,
   compiled and run; or, when its first byte is Ctrl-B (0x02, the byte that enters MicroPython's friendly REPL
   from its raw one), a line-by-line session: a `>>> ` prompt, `... ` for the lines of a compound statement (an
   empty line ends it), each statement compiled and run as it comes, expression values printed, until the end
   of input. The exit status is 0, 1 after an uncaught exception in a script (printed as MicroPython prints
   it; in a session it is printed and the session goes on), or sys.exit's status. Console output goes through
   write(2) on fd 1. */
#include <string.h>
#include <unistd.h>
#include "port/micropython_embed.h"
#include "py/mphal.h"
#include "py/compile.h"
#include "py/repl.h"
#include "py/runtime.h"
#include "py/stackctrl.h"

/* The garbage-collected heap and the script (or session line) buffer (bss: zeroed by the loader). */
static char heap[128 * 1024];
static char script[16 * 1024];

/* MicroPython's console output (replaces the embed port's printf-based one). */
void mp_hal_stdout_tx_strn_cooked(const char *str, size_t len) {
    while (len > 0) {
        ssize_t n = write(1, str, len);
        if (n <= 0)
            return;
        str += n;
        len -= (size_t)n;
    }
}

static void say(const char *s) {
    mp_hal_stdout_tx_strn_cooked(s, strlen(s));
}

/* What execute() returns for sys.exit(n) / raise SystemExit(n): this flag with the status n in the low byte. */
#define EXITED 0x100

/* Compiles and runs `len` bytes of `src` as `kind` (a file, or one statement of a session, whose expression
   values are printed). Returns 0, 1 after an exception (its traceback printed), or EXITED | status. */
static int execute(const char *src, size_t len, mp_parse_input_kind_t kind) {
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_lexer_t *lex = mp_lexer_new_from_str_len(MP_QSTR__lt_stdin_gt_, src, len, 0);
        qstr source_name = lex->source_name;
        mp_parse_tree_t tree = mp_parse(lex, kind);
        mp_obj_t module = mp_compile(&tree, source_name, kind == MP_PARSE_SINGLE_INPUT);
        mp_call_function_0(module);
        nlr_pop();
        return 0;
    }
    mp_obj_t exc = MP_OBJ_FROM_PTR(nlr.ret_val);
    if (mp_obj_is_subclass_fast(MP_OBJ_FROM_PTR(mp_obj_get_type(exc)), MP_OBJ_FROM_PTR(&mp_type_SystemExit))) {
        /* The status n (None: 0), as CPython exits; another value is printed and exits 1. */
        mp_obj_t code = mp_obj_exception_get_value(exc);
        if (code == mp_const_none)
            return EXITED;
        if (mp_obj_is_small_int(code))
            return EXITED | (MP_OBJ_SMALL_INT_VALUE(code) & 0xff);
        mp_obj_print_helper(&mp_plat_print, code, PRINT_STR);
        say("\n");
        return EXITED | 1;
    }
    mp_obj_print_exception(&mp_plat_print, exc);
    return 1;
}

/* Appends one line of standard input (without its newline; carriage returns dropped) to script[*len..].
   Returns 0 at the end of input before any byte of the line, -1 for a line longer than the buffer, else 1. */
static int read_line(size_t *len) {
    int any = 0, too_long = 0;
    for (;;) {
        char c;
        if (read(0, &c, 1) != 1)
            break;
        any = 1;
        if (c == '\n')
            break;
        if (c == '\r')
            continue;
        if (*len < sizeof(script) - 2)
            script[(*len)++] = c;
        else
            too_long = 1;
    }
    script[*len] = 0;
    return too_long ? -1 : any;
}

/* The line-by-line session. */
static int session(void) {
    for (;;) {
        say(">>> ");
        size_t len = 0;
        int r = read_line(&len);
        if (r == 0) {
            say("\n");
            return 0;
        }
        while (r > 0 && len > 0 && mp_repl_continue_with_input(script)) {
            say("... ");
            script[len++] = '\n';
            size_t before = len;
            r = read_line(&len);
            if (r == 0 || len == before)
                break;
        }
        if (r < 0) {
            say("micropython: line longer than 16 KiB\n");
            continue;
        }
        if (len == 0)
            continue;
        int status = execute(script, len, MP_PARSE_SINGLE_INPUT);
        if (status & EXITED)
            return status & 0xff;
    }
}

int main(void) {
    int stack_top;
    mp_embed_init(&heap[0], sizeof(heap), &stack_top);
    /* The stack grows down from the top of RAM towards the bss (about 130 KiB free at 512 KiB of RAM): deeper
       recursion raises RuntimeError instead of overwriting the heap. */
    mp_stack_set_limit(96 * 1024);
    int status;
    size_t len = 0;
    ssize_t n = read(0, script, 1);
    if (n == 1 && script[0] == 0x02) {
        status = session();
    } else {
        len = n == 1 ? 1 : 0;
        for (;;) {
            if (len == sizeof(script) - 1) {
                static const char msg[] = "micropython: script longer than 16 KiB\n";
                write(2, msg, sizeof(msg) - 1);
                return 2;
            }
            n = read(0, script + len, sizeof(script) - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
        }
        script[len] = 0;
        status = execute(script, len, MP_PARSE_FILE_INPUT) & 0xff;
    }
    mp_embed_deinit();
    return status;
}
