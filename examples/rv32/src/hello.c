#include "rt.h"
int main(void) {
    put_str("Hello from RV32IM!\n");
    return 0;
}
