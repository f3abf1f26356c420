; The 2A03 demo of `loom run configs/6502-flat.toml`: a greeting, then the squares of 1 to 10 in decimal.
; Console: a store to $F001 prints a byte; a store to $F002 ends the program with that exit status.
; Build: ca65 demo.s -o demo.o && ld65 -t none -S 0x0400 demo.o -o demo.bin   (loaded and started at $0400)

        .setcpu "6502"
CONSOUT = $F001
EXIT    = $F002
n       = $00           ; the number to square
sq      = $02           ; its square (16 bits)
num     = $04           ; print16's argument (16 bits)
digit   = $06
started = $07
tmp     = $08

start:  ldx #0
msg:    lda text,x
        beq squares
        sta CONSOUT
        inx
        bne msg
squares:
        lda #1
        sta n
loop:   lda #0          ; sq = n + n + ... (n times)
        sta sq
        sta sq+1
        ldx n
add:    clc
        lda sq
        adc n
        sta sq
        bcc nocarry
        inc sq+1
nocarry:
        dex
        bne add
        lda n
        sta num
        lda #0
        sta num+1
        jsr print16
        ldx #0
m2:     lda times,x
        beq m2done
        sta CONSOUT
        inx
        bne m2
m2done: lda sq
        sta num
        lda sq+1
        sta num+1
        jsr print16
        lda #10
        sta CONSOUT
        inc n
        lda n
        cmp #11
        bne loop
        lda #0
        sta EXIT
halt:   jmp halt

; Prints num (16 bits) in decimal: subtract each power of ten while it fits, skip leading zeros.
print16:
        lda #0
        sta started
        ldx #0
p_next: lda #0
        sta digit
p_sub:  lda num
        sec
        sbc pow_lo,x
        sta tmp
        lda num+1
        sbc pow_hi,x
        bcc p_done
        sta num+1
        lda tmp
        sta num
        inc digit
        jmp p_sub
p_done: lda digit
        ora started
        beq p_skip
        lda digit
        ora #'0'
        sta CONSOUT
        lda #1
        sta started
p_skip: inx
        cpx #4
        bne p_next
        lda num
        ora #'0'
        sta CONSOUT
        rts

pow_lo: .byte <10000, <1000, <100, <10
pow_hi: .byte >10000, >1000, >100, >10
text:   .byte "Hello from a 6502 woven into Qwen3.5 weights!", 10, 0
times:  .byte " squared = ", 0
