; The 2A03 demo of `loom run configs/nes.toml`: demo.s as an NROM cartridge. It writes its text to PRG RAM with
; blargg's test protocol ($6001-$6003 = DE B0 61, text from $6004, status 0 at $6000 when done), which the NES
; host prints. Build: ca65 nes_demo.s -o nes_demo.o && ld65 -C nes_demo.cfg nes_demo.o -o nes_demo.nes

        .setcpu "6502"
out     = $20           ; where the next text byte goes (16 bits)
n       = $00           ; the number to square
sq      = $02           ; its square (16 bits)
num     = $04           ; print16's argument (16 bits)
digit   = $06
started = $07
tmp     = $08

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
msg:    lda text,x
        beq squares
        jsr putc
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
        jsr putc
        inx
        bne m2
m2done: lda sq
        sta num
        lda sq+1
        sta num+1
        jsr print16
        lda #10
        jsr putc
        inc n
        lda n
        cmp #11
        bne loop
        lda #0
        jsr putc        ; the text's terminating zero
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
putc:   ldy #0
        sta (out),y
        inc out
        bne putc_done
        inc out+1
putc_done:
        rts

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
        jsr putc
        lda #1
        sta started
p_skip: inx
        cpx #4
        bne p_next
        lda num
        ora #'0'
        jsr putc
        rts

pow_lo: .byte <10000, <1000, <100, <10
pow_hi: .byte >10000, >1000, >100, >10
text:   .byte "Hello from a 6502 woven into Qwen3.5 weights!", 10, 0
times:  .byte " squared = ", 0

        .segment "VECTORS"
        .word halt, start, halt
