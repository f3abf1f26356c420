/* MicroPython on the RV32IM machine: reads a Python script from standard input (read(2) on fd 0, until
   end of input), compiles and runs it, and exits 0, or 1 when the script raised an exception (printed as
   MicroPython prints it), or with sys.exit's status. Console output goes through write(2) on fd 1. */
#include <string.h>
#include <unistd.h>
#include "port/micropython_embed.h"
#include "py/mphal.h"
#include "py/compile.h"
#include "py/runtime.h"
#include "py/stackctrl.h"

/* The garbage-collected heap and the script buffer (bss: zeroed by the loader). */
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

static int failed;

int main(void) {
    size_t len = 0;
    for (;;) {
        if (len == sizeof(script) - 1) {
            static const char msg[] = "micropython: script longer than 16 KiB\n";
            write(2, msg, sizeof(msg) - 1);
            return 2;
        }
        ssize_t n = read(0, script + len, sizeof(script) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    script[len] = 0;
    int stack_top;
    mp_embed_init(&heap[0], sizeof(heap), &stack_top);
    /* The stack grows down from the top of RAM towards the bss (about 150 KiB free at 512 KiB of RAM): deeper
       recursion raises RuntimeError instead of overwriting the heap. */
    mp_stack_set_limit(96 * 1024);
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_lexer_t *lex = mp_lexer_new_from_str_len(MP_QSTR__lt_stdin_gt_, script, len, 0);
        qstr source_name = lex->source_name;
        mp_parse_tree_t tree = mp_parse(lex, MP_PARSE_FILE_INPUT);
        mp_obj_t module = mp_compile(&tree, source_name, false);
        mp_call_function_0(module);
        nlr_pop();
    } else {
        mp_obj_t exc = MP_OBJ_FROM_PTR(nlr.ret_val);
        if (mp_obj_is_subclass_fast(MP_OBJ_FROM_PTR(mp_obj_get_type(exc)), MP_OBJ_FROM_PTR(&mp_type_SystemExit))) {
            /* sys.exit(n) or raise SystemExit: the status n (None: 0), as CPython exits; another value is
               printed and exits 1. */
            mp_obj_t code = mp_obj_exception_get_value(exc);
            if (code == mp_const_none) {
                failed = 0;
            } else if (mp_obj_is_small_int(code)) {
                failed = MP_OBJ_SMALL_INT_VALUE(code) & 0xff;
            } else {
                mp_obj_print_helper(&mp_plat_print, code, PRINT_STR);
                mp_hal_stdout_tx_strn_cooked("\n", 1);
                failed = 1;
            }
        } else {
            mp_obj_print_exception(&mp_plat_print, exc);
            failed = 1;
        }
    }
    mp_embed_deinit();
    return failed;
}
