; The 2A03 demo: a greeting, then the squares of 1 to 10 in decimal.
; Flat map (`loom run configs/6502-flat.toml`): a store to $F001 prints a byte, a store to $F002 ends the program
; with that exit status. Build: ca65 demo.s -o demo.o && ld65 -t none -S 0x0400 demo.o -o demo.bin
; NES map (`loom run configs/nes.toml`, with -D NES): an NROM cartridge that writes its text to PRG RAM with
; blargg's test protocol ($6001-$6003 = DE B0 61, text from $6004, status 0 at $6000 when done), which the NES
; host prints. Build: ca65 -D NES demo.s -o nes_demo.o && ld65 -C nes_demo.cfg nes_demo.o -o nes_demo.nes

        .setcpu "6502"
.ifdef NES
out     = $20           ; where the next text byte goes (16 bits)
.macro  putc
        jsr nes_putc
.endmacro
.else
CONSOUT = $F001
EXIT    = $F002
.macro  putc
        sta CONSOUT
.endmacro
.endif
n       = $00           ; the number to square
sq      = $02           ; its square (16 bits)
num     = $04           ; print16's argument (16 bits)
digit   = $06
started = $07
tmp     = $08

.ifdef NES
        .segment "HEADER"
        .byte "NES", $1A, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        .segment "CODE"
start:  sei
        ldx #$FF
        txs
        lda #$04
        sta out
        lda #$60
        sta out+1
        ldx #0
.else
start:  ldx #0
.endif
msg:    lda text,x
        beq squares
        putc
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
        putc
        inx
        bne m2
m2done: lda sq
        sta num
        lda sq+1
        sta num+1
        jsr print16
        lda #10
        putc
        inc n
        lda n
        cmp #11
        bne loop
.ifdef NES
        lda #0
        putc            ; the text's terminating zero
        lda #$DE
        sta $6001
        lda #$B0
        sta $6002
        lda #$61
        sta $6003
        lda #0
        sta $6000       ; status: passed
halt:   jmp halt

; Appends A to the text in PRG RAM.
nes_putc:
        ldy #0
        sta (out),y
        inc out
        bne putc_done
        inc out+1
putc_done:
        rts
.else
        lda #0
        sta EXIT
halt:   jmp halt
.endif

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
        putc
        lda #1
        sta started
p_skip: inx
        cpx #4
        bne p_next
        lda num
        ora #'0'
        putc
        rts

pow_lo: .byte <10000, <1000, <100, <10
pow_hi: .byte >10000, >1000, >100, >10
text:   .byte "Hello from a 6502 woven into Qwen3.5 weights!", 10, 0
times:  .byte " squared = ", 0
.ifdef NES

        .segment "VECTORS"
        .word halt, start, halt
.endif
