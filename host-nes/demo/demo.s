; =====================================================================================================================
;  LOOM NES DEMO - "IN THE WEIGHTS"
;
;  A small NROM demo for host-nes, the NES host around a 6502 that runs inside a neural network's weights.
;  Assemble with build.sh (ca65 + ld65 from cc65; demo.cfg is the linker configuration).
;
;  What it shows:
;    - a status bar (4 tile rows: a woven border, the title, the subtitle and a solid bar) that stays fixed;
;    - below it a starry sky that scrolls 1 pixel per frame, and under a horizon line a grass and brick ground
;      that scrolls 2 pixels per frame (parallax). The first split is found with the sprite 0 hit, the second
;      is timed from it;
;    - five bouncing balls (sprites 5-9) and a 16x16 robot (sprites 1-4) moved by controller 1; holding A
;      changes its colours;
;    - a looping tune: melody on pulse 1, bass on the triangle, drums on the noise channel;
;    - OAM DMA from page $02 every frame.
;
;  Written for speed inside the network, where every INSTRUCTION costs (not every cycle): all the waiting is
;  done with 8-cycle read-modify-write instructions (DCP (zp),Y, an unofficial but stable opcode), a few
;  thousand of them unrolled in one block that is called at the right entry point for the wanted length
;  (BURN n). The vertical blank handler does all the work of a frame:
;
;      NMI (scanline 241)  OAM DMA, scroll 0,0 for the status bar
;                          burn a calibrated number of cycles to scanline ~1, check that the pre-render line
;                          cleared the sprite 0 flag ($2002 bit 6; normally one read)
;                          burn to just after the sprite 0 hit (scanline 24), check that the flag is set
;                          (normally one read), then write the sky's scroll
;                          burn to scanline ~169 (inside the horizon line), write the ground's scroll
;                          music, scroll positions, balls, controller and player for the next frame
;                          RTI to the idle loop, which burns cycles the same way until the next NMI.
;
;  Timing-sensitive writes always land inside a row of solid-colour tiles (the bar at scanlines 24-31, the
;  horizon at 168-175), where a change of the scroll in the middle of a line shows nothing, so the picture does
;  not depend on the exact cycle of the split.
;
;  Everything is deterministic: all 2 KiB of RAM are cleared at reset before anything reads them, OAM is
;  loaded from the shadow page before rendering starts, and nothing depends on power-on state.
; =====================================================================================================================

.setcpu "6502X"                 ; for DCP, an unofficial opcode (stable on the 2A03)

; ---- hardware registers (NESdev wiki: "PPU registers", "APU registers", "Standard controller") ----------------------
PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
OAMADDR   = $2003
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007
SQ1_VOL   = $4000
SQ1_SWEEP = $4001
SQ1_LO    = $4002
SQ1_HI    = $4003
TRI_LINEAR= $4008
TRI_LO    = $400A
TRI_HI    = $400B
NOISE_VOL = $400C
NOISE_LO  = $400E
NOISE_HI  = $400F
DMC_FREQ  = $4010
OAMDMA    = $4014
APU_STATUS= $4015
JOY1      = $4016
APU_FRAME = $4017

; ---- settings ---------------------------------------------------------------------------------------------------------
CTRL_BASE = %10001000           ; NMI on, 8x8 sprites from $1000, background from $0000, +1 increments, nametable 0
MASK_ON   = %00011110           ; show background and sprites, also in the leftmost 8 pixels

BURN_PAGE = $0700               ; scratch page the burn instructions decrement (cleared at reset)

; Tiles (pattern table 0, background). Text uses the ASCII codes: ' ' = $20 (blank), '0' = $30, 'A' = $41.
T_BLANK   = $00
T_BAR     = $01                 ; solid colour 3: the bottom of the status bar and the horizon
T_BORDER  = $02
T_STAR    = $03                 ; $03-$06: four kinds of star
T_GRASS   = $07
T_SOIL    = $08
T_BRICK   = $09
T_TUFT    = $0A                 ; grass with a taller tuft
T_PATCH   = $0B                 ; soil with a dark patch
T_LBRICK  = $0C                 ; light bricks
T_CBRICK  = $0D                 ; cracked bricks

; Sprite tiles (pattern table 1).
S_ZERO    = $00
S_BALL    = $01
S_ROBOT   = $02                 ; $02-$05: top left, top right, bottom left, bottom right

; Sprite 0 sits on the first line of the bar (tile row 3, scanlines 24-31), behind the background: the bar is
; opaque there, so the sprite is never seen but hits at scanline 24, x = 16.
SPR0_Y    = 23                  ; OAM Y is one less than the first scanline drawn
SPR0_X    = 16

FLOOR_Y   = 159                 ; a ball's OAM Y when it rests on the horizon line (its bottom row on scanline 167)

; ---- calibration of the two splits (see the NMI handler) --------------------------------------------------------------
; The NMI's first instruction runs at scanline 241, dot ~30-55 (it waits for the DCP it interrupts). Measured on
; host-nes, these put the check that the sprite 0 flag is clear at scanline ~1 (after the pre-render line cleared
; it), the first look for the hit at scanline 24, dot ~140 (the hit is at dot 17), and the ground's scroll write
; at scanline ~169. Any of them may drift by a few lines without a visible effect: the loops look again.
SPLIT0_BURN = 230               ; DCPs from the NMI's prologue to the check that the flag is clear
SPLIT1_BURN = 342               ; DCPs from there to the first look for the hit
SPLIT2_BURN = 2057              ; DCPs from the sky's scroll write to the ground's
POLL_BURN   = 8                 ; DCPs between two polls if the first one was early
BURN_MAX    = 2100              ; the burn block's length (at least the largest BURN)

; BURN n: spend n*8 + 12 cycles in 2 + n instructions: call the burn block n instructions before its end.
.macro BURN n
        .assert (n) <= BURN_MAX, error, "BURN longer than the block"
        jsr burn_end - 2*(n)
.endmacro

; ---- iNES header ------------------------------------------------------------------------------------------------------
.segment "HEADER"
        .byte "NES", $1A
        .byte 1                 ; 1 x 16 KiB PRG ROM (NROM-128)
        .byte 1                 ; 1 x 8 KiB CHR ROM
        .byte %00000001         ; mapper 0, vertical mirroring ($2000 | $2400 side by side)
        .byte %00000000         ; mapper 0, iNES 1.0
        .res 8, 0

; ---- variables --------------------------------------------------------------------------------------------------------
.segment "ZEROPAGE"
burnp:    .res 2                ; pointer for DCP (burnp),Y: BURN_PAGE (any Y stays inside the page)
tick:     .res 1                ; frame counter (drives the balls)
sky_x:    .res 1                ; sky scroll X (low 8 bits) ...
sky_ctrl: .res 1                ; ... and PPUCTRL with its nametable bit (the 9th bit of X)
gnd_x:    .res 1                ; ground scroll X ...
gnd_ctrl: .res 1                ; ... and its PPUCTRL
mtimer:   .res 1                ; frames left in the current music step
mpos:     .res 1                ; music step (0-31)
tmp:      .res 1
; used while loading the nametables
txt_row:  .res 1                ; the sky row that holds this nametable's line of text
txt_off:  .res 1                ; that text's offset in rowdata
soff:     .res 1                ; offset in rowdata of the next row of stars
gnd_off:  .res 1                ; this nametable's offset into the ground rows (so the two differ)

.segment "OAM"
oam:      .res 256              ; OAM shadow, copied by DMA every vertical blank
; sprite slots
SPR0      = oam + 0*4
ROBOT     = oam + 1*4           ; 4 sprites: top left, top right, bottom left, bottom right
BALLS     = oam + 5*4           ; 5 sprites
; byte offsets within a slot
OY = 0
OT = 1
OA = 2
OX = 3

; Offsets of the text rows in rowdata (see there).
ROW_TITLE    = 0
ROW_SUBTITLE = 32
ROW_TEXT0    = 64               ; nametable 0's line in the sky
ROW_TEXT1    = 96               ; nametable 1's

; =====================================================================================================================
;  Reset: the usual start-up (NESdev wiki, "Init code"), with all waits done by the burn block.
; =====================================================================================================================
.segment "CODE"
reset:
        sei                     ; no IRQs
        cld                     ; (no decimal mode on the 2A03; for other 6502s)
        ldx #$40
        stx APU_FRAME           ; APU frame counter: 4-step mode, frame IRQ off
        ldx #$FF
        txs                     ; stack at $01FF
        inx                     ; X = 0
        stx PPUCTRL             ; NMI off
        stx PPUMASK             ; rendering off
        stx DMC_FREQ            ; DMC IRQ off
        stx APU_STATUS          ; all sound channels off

        ; Clear all 2 KiB of RAM. Done first, so that even the burn instructions of the waits below read
        ; initialised memory.
        txa                     ; A = 0
@clear: sta $0000,x
        sta $0100,x
        sta $0200,x
        sta $0300,x
        sta $0400,x
        sta $0500,x
        sta $0600,x
        sta $0700,x
        inx
        bne @clear
        lda #>BURN_PAGE
        sta burnp+1             ; burnp = BURN_PAGE (its low byte was cleared)
        ; Every sprite's Y to $FF (below the screen): X = 0, 4, ... 60 in each quarter of the OAM page.
        lda #$FF
@hide:  sta oam,x
        sta oam+64,x
        sta oam+128,x
        sta oam+192,x
        axs #<-4                ; X = (A & X) + 4 = X + 4 (A = $FF; unofficial AXS)
        cpx #64
        bne @hide

        ; The PPU needs two vertical blanks to warm up before it takes writes.
        bit PPUSTATUS           ; clear a vblank flag left from before reset
        jsr wait_vblank
        jsr wait_vblank

        ; --- sound: pulse 1 (melody), triangle (bass), noise (drums) ---
        lda #%10000011          ; duty 50%, length counter on, envelope decaying from 15, period 3 (~1/4 s)
        sta SQ1_VOL
        lda #%00001000          ; sweep off (negate set so low notes are not muted)
        sta SQ1_SWEEP
        lda #24                 ; triangle: linear counter 24/240 s per note (staccato), length counter on
        sta TRI_LINEAR
        lda #%00010101          ; noise: length counter on, constant volume 5
        sta NOISE_VOL
        lda #%00001101          ; enable pulse 1, triangle, noise
        sta APU_STATUS
        lda #1
        sta mtimer              ; the first music step at the first NMI

        ; --- palette ---
        lda #$3F
        sta PPUADDR
        ldx #0
        stx PPUADDR
@pal:   lda palette,x
        sta PPUDATA
        inx
        cpx #32
        bne @pal

        ; --- the two nametables ($2000, then $2400): same bar, sky, horizon and ground; a line of text each ---
        lda #$20
        ldx #9                  ; nametable 0: text on row 9 ...
        ldy #ROW_TEXT0          ; ... this one (gnd_off is 0)
        jsr load_nametable
        lda #8
        sta gnd_off             ; nametable 1: its ground rows 8 tiles further on
        lda #$24
        ldx #14
        ldy #ROW_TEXT1
        jsr load_nametable

        ; --- sprites: sprite 0, the robot and the balls (positions of the balls come with the first frame) ---
        ldx #oam_init_end - oam_init - 1
@spr:   lda oam_init,x
        sta oam,x
        dex
        bpl @spr

        ; --- scroll state ---
        lda #CTRL_BASE
        sta sky_ctrl
        sta gnd_ctrl            ; (sky_x, gnd_x, tick, mpos are 0 from the RAM clear)

        ; OAM from the shadow page, then start rendering and NMIs at the start of a vertical blank.
        lda #0
        sta OAMADDR
        lda #>oam
        sta OAMDMA
        jsr wait_vblank
        lda #0
        sta PPUSCROLL
        sta PPUSCROLL
        lda #MASK_ON
        sta PPUMASK
        lda #CTRL_BASE
        sta PPUCTRL
        ; fall into the idle loop

; The idle loop: everything happens in the NMI handler. 2,100 DCPs per pass: few instructions per cycle.
idle:
        jsr burn_start
        jmp idle

; Wait for the vertical blank flag, looking at it every ~270 cycles (it stays set for ~2,270 cycles, until the
; pre-render line, so it is not missed).
wait_vblank:
        BURN 32
        bit PPUSTATUS
        bpl wait_vblank
        rts

; Load one nametable and its attributes with the PPU off.
;   A = high byte of its address ($20 or $24), X = the sky row (4-20) of its text, Y = the text's offset in rowdata.
load_nametable:
        sta PPUADDR
        lda #0
        sta PPUADDR
        stx txt_row
        sty txt_off
        lda #T_BORDER           ; row 0: woven border
        jsr fill_row
        ldx #ROW_TITLE          ; row 1: title
        jsr copy_row
        ldx #ROW_SUBTITLE       ; row 2: subtitle
        jsr copy_row
        lda #T_BAR              ; row 3: the bar (sprite 0 hits here)
        jsr fill_row
        ldy #4                  ; rows 4-20: stars, and the text on txt_row
@sky:   cpy txt_row
        bne @stars
        ldx txt_off
        jmp @row
@stars: lda soff                ; next star row: 37 bytes on in the star map, wrapped into 128-255
        clc
        adc #37
        ora #$80
        sta soff
        tax
@row:   jsr copy_row
        iny
        cpy #21
        bne @sky
        lda #T_BAR              ; row 21: the horizon (the ground's split happens here)
        jsr fill_row
        lda #GROUND_GRASS       ; row 22: grass
        jsr copy_ground_row
        lda #GROUND_SOIL        ; row 23: soil
        jsr copy_ground_row
        ldy #3                  ; rows 24-29: two kinds of brick row, three times
@brick: lda #GROUND_BRICK_A
        jsr copy_ground_row
        lda #GROUND_BRICK_B
        jsr copy_ground_row
        dey
        bne @brick
        ; Attributes (2 bits per 16x16 pixels: top left, top right, bottom left, bottom right):
        lda #%00000101          ; rows 0-1 palette 1 (border, title), rows 2-3 palette 0 (subtitle, bar)
        jsr fill_row + 3*24     ; 8 bytes
        lda #%00000000          ; rows 4-19: sky, palette 0
        jsr fill_row            ; 32 bytes
        lda #%11110000          ; rows 20-21 sky and horizon (palette 0), rows 22-23 grass (palette 3)
        jsr fill_row + 3*24     ; 8 bytes
        lda #%10101010          ; rows 24-29: bricks, palette 2
        jmp fill_row + 3*16     ; 16 bytes (its RTS returns for us)

; Write tile A to PPUDATA 32 times (one row). Entering at fill_row + 3*k writes 32-k times. Keeps X and Y.
fill_row:
        .repeat 32
        sta PPUDATA
        .endrepeat
        rts

; Copy 32 bytes from rowdata + X to PPUDATA (one row). Keeps Y.
copy_row:
        .repeat 32, i
        lda rowdata + i,x
        sta PPUDATA
        .endrepeat
        rts

; Copy one ground row: 32 bytes from grounddata + A + gnd_off. Keeps Y.
copy_ground_row:
        clc
        adc gnd_off
        tax
        .repeat 32, i
        lda grounddata + i,x
        sta PPUDATA
        .endrepeat
        rts

; =====================================================================================================================
;  NMI: one frame's work (see the top of the file). Registers are not saved: the idle loop needs none.
; =====================================================================================================================
nmi:
        ; --- vertical blank: status bar scroll, OAM DMA ---
        lda #0
        sta OAMADDR
        sta PPUSCROLL           ; scroll 0,0 and nametable 0 for the status bar
        sta PPUSCROLL
        lda #CTRL_BASE
        sta PPUCTRL
        lda #>oam
        sta OAMDMA              ; 256 bytes of sprites (513 cycles)

        ; --- split 1: wait for the sprite 0 hit at the top of the bar ---
        ; First the flag must be clear: it stays set from the last frame's hit until the pre-render line. The
        ; burn brings us to scanline ~1, where it is (if not, look again every ~75 cycles until it is).
        BURN SPLIT0_BURN
@clear: bit PPUSTATUS
        bvc @wait
        BURN POLL_BURN
        jmp @clear
        ; Then burn to just after the hit (scanline 24) and look. If it is not there yet (the timing changed),
        ; look again every ~75 cycles; give up after 24 looks (no hit: the split comes late).
@wait:  BURN SPLIT1_BURN
        ldx #24
@poll:  bit PPUSTATUS
        bvs @hit
        BURN POLL_BURN
        dex
        bne @poll
@hit:   lda sky_x               ; sky: X scroll (the second write, the Y scroll, is not used mid-frame)
        sta PPUSCROLL
        sta PPUSCROLL
        lda sky_ctrl            ; and its nametable
        sta PPUCTRL

        ; --- split 2: the ground, timed from split 1, inside the horizon line (scanlines 168-175) ---
        BURN SPLIT2_BURN
split2:
        lda gnd_x
        sta PPUSCROLL
        sta PPUSCROLL
        lda gnd_ctrl
        sta PPUCTRL

        ; --- the next frame: music ---
        dec mtimer
        bne @scroll
        jsr music_step

        ; --- scroll: sky 1 pixel, ground 2 pixels per frame, over the two nametables (X 0-511) ---
@scroll:
        inc sky_x
        bne :+
        lda sky_ctrl
        eor #%00000001
        sta sky_ctrl
:       lda gnd_x
        clc
        adc #2
        sta gnd_x
        bcc :+
        lda gnd_ctrl
        eor #%00000001
        sta gnd_ctrl
:
        ; --- balls: positions from tables, by the frame counter (X) and twice it (Y). Speed 1 is one step of the
        ;     256-step tri table per frame, about 1.8 pixels ---
        inc tick
        ldx tick
        txa
        asl a
        tay
        lda bounce128 + 0,x     ; ball 1: tall slow bounce, across the screen at speed 1
        sta BALLS + 0*4 + OY
        lda tri + 0,x
        sta BALLS + 0*4 + OX
        lda bounce64 + 16,x     ; ball 2: medium bounce, speed 2
        sta BALLS + 1*4 + OY
        lda tri + 40,y
        sta BALLS + 1*4 + OX
        lda bounce64 + 48,x     ; ball 3: medium bounce, speed 1, the other way
        sta BALLS + 2*4 + OY
        lda tri + 128,x
        sta BALLS + 2*4 + OX
        lda bounce32 + 9,x      ; ball 4: small fast bounce, speed 2
        sta BALLS + 3*4 + OY
        lda tri + 190,y
        sta BALLS + 3*4 + OX
        lda bounce128 + 60,x    ; ball 5: tall bounce, speed 1
        sta BALLS + 4*4 + OY
        lda tri + 100,x
        sta BALLS + 4*4 + OX

        ; --- controller 1: strobe, then 8 reads, bit 0 of each: A, B, Select, Start, Up, Down, Left, Right ---
        ldx #1
        stx JOY1                ; strobe high: the pad latches its buttons
        dex
        stx JOY1                ; strobe low: shift them out
        lda JOY1                ; A: the robot's palette, 2 (cyan) or 3 (yellow)
        and #1
        ora #2
        sta ROBOT + 0*4 + OA
        sta ROBOT + 1*4 + OA
        sta ROBOT + 2*4 + OA
        sta ROBOT + 3*4 + OA
        lda JOY1                ; B, Select, Start: read past
        lda JOY1
        lda JOY1
        lda JOY1                ; Up
        and #1
        sta tmp
        lda JOY1                ; Down
        and #1
        sec
        sbc tmp                 ; Down - Up: 1, 0 or -1
        asl a                   ; 2 pixels per frame
        clc
        adc ROBOT + 0*4 + OY
        sta ROBOT + 0*4 + OY
        sta ROBOT + 1*4 + OY
        clc
        adc #8
        sta ROBOT + 2*4 + OY
        sta ROBOT + 3*4 + OY
        lda JOY1                ; Left
        and #1
        sta tmp
        lda JOY1                ; Right
        and #1
        sec
        sbc tmp                 ; Right - Left
        asl a
        clc
        adc ROBOT + 0*4 + OX
        sta ROBOT + 0*4 + OX
        sta ROBOT + 2*4 + OX
        clc
        adc #8
        sta ROBOT + 1*4 + OX
        sta ROBOT + 3*4 + OX
nmi_end:
        rti

; One music step (every STEP_FRAMES frames): a new melody note, bass note and drum where the song has one.
STEP_FRAMES = 8
music_step:
        lda #STEP_FRAMES
        sta mtimer
        ldx mpos
        ldy song_melody,x       ; melody on pulse 1 (0: let the last note ring)
        beq :+
        lda period_lo,y
        sta SQ1_LO
        lda period_hi,y         ; (writing the high byte restarts the envelope)
        sta SQ1_HI
:       ldy song_bass,x         ; bass on the triangle (the table's notes sound an octave lower there)
        beq :+
        lda period_lo,y
        sta TRI_LO
        lda period_hi,y         ; (and reloads the linear counter)
        sta TRI_HI
:       ldy song_drums,x        ; drums on the noise channel
        beq :+
        lda drum_period,y
        sta NOISE_LO
        lda drum_length,y
        sta NOISE_HI
:       inx
        txa
        and #31
        sta mpos
        rts

; No IRQ is ever enabled; an IRQ/BRK would just return.
irq:
        rti

; =====================================================================================================================
;  Data
; =====================================================================================================================
.segment "RODATA"

palette:
        ; background
        .byte $0F, $30, $00, $12        ; 0: sky - white stars and text, grey shadows, blue bars
        .byte $0F, $28, $06, $27        ; 1: border and title - yellow, dark red shadow, orange
        .byte $0F, $07, $17, $27        ; 2: bricks - mortar, brick, highlight
        .byte $0F, $0A, $1A, $2A        ; 3: grass - dark, mid, light green
        ; sprites
        .byte $0F, $06, $16, $36        ; 0: red ball
        .byte $0F, $02, $12, $32        ; 1: blue ball
        .byte $0F, $0C, $2C, $30        ; 2: cyan (robot, ball)
        .byte $0F, $07, $28, $30        ; 3: yellow (robot with A held, ball)

; Initial sprites: Y, tile, attributes (bit 5: behind the background; bits 0-1: palette), X.
oam_init:
        .byte SPR0_Y, S_ZERO, %00100000, SPR0_X ; sprite 0: behind the bar
        .byte 120, S_ROBOT+0, 2, 112            ; robot, top left
        .byte 120, S_ROBOT+1, 2, 120            ;        top right
        .byte 128, S_ROBOT+2, 2, 112            ;        bottom left
        .byte 128, S_ROBOT+3, 2, 120            ;        bottom right
        .byte $FF, S_BALL, 0, 0                 ; balls (placed from the first frame on)
        .byte $FF, S_BALL, 1, 0
        .byte $FF, S_BALL, 2, 0
        .byte $FF, S_BALL, 3, 0
        .byte $FF, S_BALL, 0, 0
oam_init_end:

; Rows of tiles copied by copy_row: the status bar's text, a line of text for each nametable's sky, then a map
; of stars (any 32 bytes from offset 128 to 255 make a row).
.macro CENTERED str
        .res (32 - .strlen(str)) / 2, ' '
        .byte str
        .res 32 - (32 - .strlen(str)) / 2 - .strlen(str), ' '
.endmacro

rowdata:
        CENTERED "LOOM NES DEMO"                        ; ROW_TITLE
        CENTERED "IN THE WEIGHTS"                       ; ROW_SUBTITLE
        CENTERED "A 6502 INSIDE A NEURAL NETWORK"       ; ROW_TEXT0
        CENTERED "HOLD A TO CHANGE COLOUR"              ; ROW_TEXT1
        .assert * - rowdata = 128, error, "rowdata: the star map starts at 128"
        ; a star where a little hash of the position is below 12 (about one tile in ten); the hash picks the kind
        .repeat 160, i
        star_hash .set (i*i*i*7 + i*i*3 + i*11 + 5) .mod 113
        .byte (star_hash < 12) * (T_STAR + (star_hash & 3))
        .endrepeat

; Ground rows, 40 tiles each (a nametable copies 32 of them from its gnd_off): the usual tile, with a variant
; where a hash of the position is small, so that the scrolling shows.
GROUND_GRASS   = 0
GROUND_SOIL    = 40
GROUND_BRICK_A = 80
GROUND_BRICK_B = 120
grounddata:
        .repeat 40, i
        gnd_hash .set (i*i*i*5 + i*i*7 + i*3 + 11) .mod 97
        .byte T_GRASS + (gnd_hash < 24) * (T_TUFT - T_GRASS)
        .endrepeat
        .repeat 40, i
        gnd_hash .set (i*i*i*3 + i*i*11 + i*13 + 2) .mod 89
        .byte T_SOIL + (gnd_hash < 14) * (T_PATCH - T_SOIL)
        .endrepeat
        .repeat 80, i
        gnd_hash .set (i*i*i*7 + i*i*5 + i*17 + 9) .mod 101
        .byte T_BRICK + (gnd_hash < 10) * (T_LBRICK - T_BRICK) + (gnd_hash >= 10 && gnd_hash < 18) * (T_CBRICK - T_BRICK)
        .endrepeat

; ---- the tune: 32 steps of 8 frames (a 4-bar loop in A minor), one byte per step and channel -----------------------
; Note numbers index the period table (0: nothing new on this step). The triangle sounds an octave below the pulse
; for the same period, so the bass is written an octave up (+12) to sound where it is named.
        C2 = 1
        Cs2 = 2
        D2 = 3
        Ds2 = 4
        E2 = 5
        F2 = 6
        Fs2 = 7
        G2 = 8
        Gs2 = 9
        A2 = 10
        As2 = 11
        B2 = 12
        OCT = 12
        C3 = C2 + OCT
        D3 = D2 + OCT
        E3 = E2 + OCT
        F3 = F2 + OCT
        G3 = G2 + OCT
        Gs3 = Gs2 + OCT
        A3 = A2 + OCT
        B3 = B2 + OCT
        C4 = C3 + OCT
        D4 = D3 + OCT
        E4 = E3 + OCT
        F4 = F3 + OCT
        G4 = G3 + OCT
        Gs4 = Gs3 + OCT
        A4 = A3 + OCT
        B4 = B3 + OCT
        C5 = C4 + OCT
        D5 = D4 + OCT
        E5 = E4 + OCT
        F5 = F4 + OCT
        G5 = G4 + OCT
        A5 = A4 + OCT

song_melody:
        .byte A4, 0,  C5, 0,  E5, 0,  A5, G5        ; Am
        .byte E5, 0,  D5, C5, D5, 0,  E5, 0         ; F
        .byte F5, 0,  E5, D5, C5, 0,  D5, 0         ; Dm  G
        .byte E5, 0,  C5, 0,  B4, 0,  Gs4, 0        ; E
song_bass:
        .byte A2+OCT, 0, A3+OCT, 0, A2+OCT, 0, A3+OCT, A2+OCT
        .byte F2+OCT, 0, F3+OCT, 0, F2+OCT, 0, F3+OCT, F2+OCT
        .byte D2+OCT, 0, D3+OCT, 0, G2+OCT, 0, G3+OCT, G2+OCT
        .byte E2+OCT, 0, E3+OCT, 0, E2+OCT, 0, E3+OCT, E2+OCT
KICK = 3
SNARE = 2
HAT = 1
song_drums:
        .repeat 4
        .byte KICK, HAT, SNARE, HAT, KICK, HAT, SNARE, HAT
        .endrepeat

; Noise: period index (bit 7 would be the short mode) and length counter load (bits 7-3: index into the APU's
; length table: 5 -> 4, 13 -> 12, 9 -> 8 half-frames).
drum_period:
        .byte 0, $02, $06, $0E          ; -, hat, snare, kick
drum_length:
        .byte 0, 5<<3, 13<<3, 9<<3

; Periods for the pulse channel, NTSC: round(1789773 / (16 * f) - 1); on the triangle the same period sounds an
; octave lower. High bytes carry length counter index 1 (254 half-frames) in bits 7-3, so each note write also
; starts the length counter.
period_lo:  .byte 0
        .byte $AD,$4D,$F3,$9D,$4C,$00   ; C2=1709 Cs2=1613 D2=1523 Ds2=1437 E2=1356 F2=1280
        .byte $B8,$74,$34,$F8,$BF,$89   ; Fs2=1208 G2=1140 Gs2=1076 A2=1016 As2=959 B2=905
        .byte $56,$26,$F9,$CE,$A6,$80   ; C3=854 Cs3=806 D3=761 Ds3=718 E3=678 F3=640
        .byte $5C,$3A,$1A,$FB,$DF,$C4   ; Fs3=604 G3=570 Gs3=538 A3=507 As3=479 B3=452
        .byte $AB,$93,$7C,$67,$52,$3F   ; C4=427 Cs4=403 D4=380 Ds4=359 E4=338 F4=319
        .byte $2D,$1C,$0C,$FD,$EF,$E1   ; Fs4=301 G4=284 Gs4=268 A4=253 As4=239 B4=225
        .byte $D5,$C9,$BD,$B3,$A9,$9F   ; C5=213 Cs5=201 D5=189 Ds5=179 E5=169 F5=159
        .byte $96,$8E,$86,$7E,$77,$70   ; Fs5=150 G5=142 Gs5=134 A5=126 As5=119 B5=112
        .byte $6A,$64,$5E,$59,$54,$4F   ; C6=106 Cs6=100 D6=94 Ds6=89 E6=84 F6=79
        .byte $4B,$46,$42,$3F,$3B,$38   ; Fs6=75 G6=70 Gs6=66 A6=63 As6=59 B6=56
period_hi:  .byte 0
        .byte $0E,$0E,$0D,$0D,$0D,$0D,$0C,$0C,$0C,$0B,$0B,$0B
        .byte $0B,$0B,$0A,$0A,$0A,$0A,$0A,$0A,$0A,$09,$09,$09
        .byte $09,$09,$09,$09,$09,$09,$09,$09,$09,$08,$08,$08
        .byte $08,$08,$08,$08,$08,$08,$08,$08,$08,$08,$08,$08
        .byte $08,$08,$08,$08,$08,$08,$08,$08,$08,$08,$08,$08

; ---- ball motion, indexed by the frame counter plus a phase (hence the 256 + phase bytes) ---------------------------
; bounceP: the OAM Y of a ball bouncing on the ground every P frames (a parabola, FLOOR_Y at each bounce).
.macro BOUNCE_TABLE period, height
        .repeat 256 + 64, i
        .byte FLOOR_Y - (height) * 4 * (i .mod (period)) * ((period) - (i .mod (period))) / ((period) * (period))
        .endrepeat
.endmacro
bounce128:  BOUNCE_TABLE 128, 110
bounce64:   BOUNCE_TABLE 64, 80
bounce32:   BOUNCE_TABLE 32, 40
; tri: X going from 8 to 240 and back every 256 steps (walls at both sides).
tri:
        .repeat 512, i
        .byte 8 + (((i & 255) < 128) * (i & 255) + ((i & 255) >= 128) * (255 - (i & 255))) * 232 / 127
        .endrepeat

; =====================================================================================================================
;  The burn block: BURN_MAX x DCP (burnp),Y (8 cycles each, on the scratch page), then RTS. BURN n calls it n
;  instructions before the end; the idle loop calls all of it.
; =====================================================================================================================
.segment "BURN"
burn_start:
        .repeat BURN_MAX
        dcp (burnp),y
        .endrepeat
burn_end:
        rts

.segment "VECTORS"
        .word nmi, reset, irq

; =====================================================================================================================
;  CHR ROM: pattern table 0 (background: graphics, then the font at the ASCII codes), pattern table 1 (sprites).
;  Each tile: 8 bytes of plane 0 (written in binary; the comment shows the tile's colours 0-3 with '.' for 0),
;  then 8 bytes of plane 1.
; =====================================================================================================================
.segment "CHARS"
chr_bg:
; tile $00: blank (sky, colour 0)
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$00,$00,$00,$00,$00,$00   ; plane 1
; tile $01: solid bar (colour 3) - the status bar's bottom row and the horizon; sprite 0 hits it
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte %11111111           ; 33333333
        .byte $FF,$FF,$FF,$FF,$FF,$FF,$FF,$FF   ; plane 1
; tile $02: woven border for the top of the status bar
        .byte %11110000           ; 11110220
        .byte %11110000           ; 13310220
        .byte %11110000           ; 13310220
        .byte %11110000           ; 11110220
        .byte %00001111           ; 02201111
        .byte %00001111           ; 02201331
        .byte %00001111           ; 02201331
        .byte %00001111           ; 02201111
        .byte $06,$66,$66,$06,$60,$66,$66,$60   ; plane 1
; tile $03: bright star
        .byte %00000000           ; ........
        .byte %00010000           ; ...1....
        .byte %00111000           ; ..131...
        .byte %00010000           ; ...1....
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$10,$00,$00,$00,$00,$00   ; plane 1
; tile $04: dim star
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; .....2..
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$00,$00,$00,$04,$00,$00   ; plane 1
; tile $05: sparkle
        .byte %00000000           ; ........
        .byte %00001000           ; ....1...
        .byte %00001000           ; ....1...
        .byte %00111110           ; ..11311.
        .byte %00001000           ; ....1...
        .byte %00001000           ; ....1...
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$00,$08,$00,$00,$00,$00   ; plane 1
; tile $06: two small stars
        .byte %00000000           ; ........
        .byte %01000000           ; .1......
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ......2.
        .byte %00000000           ; ........
        .byte $00,$00,$00,$00,$00,$00,$02,$00   ; plane 1
; tile $07: grass top
        .byte %00000000           ; ........
        .byte %00100001           ; ..3....3
        .byte %01100101           ; .33..3.3
        .byte %11010110           ; 33.3.332
        .byte %01101100           ; 23323322
        .byte %00000000           ; 22222222
        .byte %00100010           ; 22122212
        .byte %01000100           ; 21222122
        .byte $00,$21,$65,$D7,$FF,$FF,$DD,$BB   ; plane 1
; tile $08: grass and soil
        .byte %00010000           ; 22212222
        .byte %10001001           ; 12221221
        .byte %00100000           ; 22122222
        .byte %01000010           ; 21222212
        .byte %00001000           ; 22221222
        .byte %10010001           ; 12212221
        .byte %00000100           ; 22222122
        .byte %01000000           ; 21222222
        .byte $EF,$76,$DF,$BD,$F7,$6E,$FB,$BF   ; plane 1
; tile $09: bricks (two courses, joints offset)
        .byte %11111111           ; 11111111
        .byte %11111111           ; 33331333
        .byte %00001000           ; 22221222
        .byte %00001000           ; 22221222
        .byte %11111111           ; 11111111
        .byte %11111111           ; 13333333
        .byte %10000000           ; 12222222
        .byte %10000000           ; 12222222
        .byte $00,$F7,$F7,$F7,$00,$7F,$7F,$7F   ; plane 1
; tile $0A: grass tuft
        .byte %00010100           ; ...3.3..
        .byte %01010110           ; .3.3.33.
        .byte %01101110           ; .33.333.
        .byte %11010110           ; 33.3.332
        .byte %01101100           ; 23323322
        .byte %00000000           ; 22222222
        .byte %00100010           ; 22122212
        .byte %01000100           ; 21222122
        .byte $14,$56,$6E,$D7,$FF,$FF,$DD,$BB   ; plane 1
; tile $0B: soil with a dark patch
        .byte %00010000           ; 22212222
        .byte %10111001           ; 12111221
        .byte %01111100           ; 21111122
        .byte %11111110           ; 11111112
        .byte %01111100           ; 21111122
        .byte %10011001           ; 12211221
        .byte %00000100           ; 22222122
        .byte %01000000           ; 21222222
        .byte $EF,$46,$83,$01,$83,$66,$FB,$BF   ; plane 1
; tile $0C: light bricks
        .byte %11111111           ; 11111111
        .byte %11111111           ; 33331333
        .byte %11111111           ; 33331333
        .byte %11111111           ; 33331333
        .byte %11111111           ; 11111111
        .byte %11111111           ; 13333333
        .byte %11111111           ; 13333333
        .byte %11111111           ; 13333333
        .byte $00,$F7,$F7,$F7,$00,$7F,$7F,$7F   ; plane 1
; tile $0D: cracked bricks
        .byte %11111111           ; 11111111
        .byte %11111111           ; 33331333
        .byte %00101000           ; 22121222
        .byte %01001000           ; 21221222
        .byte %11111111           ; 11111111
        .byte %11110111           ; 13332333
        .byte %10001000           ; 12221222
        .byte %10010000           ; 12212222
        .byte $00,$F7,$D7,$B7,$00,$7F,$77,$6F   ; plane 1

; ---- the font: 5x7 letters in columns 1-5, colour 1, with a colour 2 shadow one pixel right and down ----
        .res $21*16 - (* - chr_bg), 0   ; pad to tile $21
; tile $21: '!'
        .byte %00010000           ; ...1....
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00000000           ; ....2...
        .byte %00010000           ; ...1....
        .byte %00000000           ; ....2...
        .byte $00,$08,$08,$08,$08,$08,$00,$08   ; plane 1
        .res $2A*16 - (* - chr_bg), 0   ; pad to tile $2A
; tile $2A: '*'
        .byte %00000000           ; ........
        .byte %01010100           ; .1.1.1..
        .byte %00111000           ; ..111.2.
        .byte %01111100           ; .11111..
        .byte %00111000           ; ..11122.
        .byte %01010100           ; .1.121..
        .byte %00000000           ; ..2.2.2.
        .byte %00000000           ; ........
        .byte $00,$00,$02,$00,$06,$08,$2A,$00   ; plane 1
        .res $2B*16 - (* - chr_bg), 0   ; pad to tile $2B
; tile $2B: '+'
        .byte %00000000           ; ........
        .byte %00010000           ; ...1....
        .byte %00010000           ; ...12...
        .byte %01111100           ; .11111..
        .byte %00010000           ; ..21222.
        .byte %00010000           ; ...12...
        .byte %00000000           ; ....2...
        .byte %00000000           ; ........
        .byte $00,$00,$08,$00,$2E,$08,$08,$00   ; plane 1
        .res $2D*16 - (* - chr_bg), 0   ; pad to tile $2D
; tile $2D: '-'
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00111000           ; ..111...
        .byte %00000000           ; ...222..
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$00,$00,$1C,$00,$00,$00   ; plane 1
        .res $2E*16 - (* - chr_bg), 0   ; pad to tile $2E
; tile $2E: '.'
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00010000           ; ...1....
        .byte %00000000           ; ....2...
        .byte $00,$00,$00,$00,$00,$00,$00,$08   ; plane 1
        .res $30*16 - (* - chr_bg), 0   ; pad to tile $30
; tile $30: '0'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01001100           ; .12.112.
        .byte %01010100           ; .121.12.
        .byte %01100100           ; .11.212.
        .byte %01000100           ; .122.12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$18,$22,$22,$0A,$32,$02,$1C   ; plane 1
        .res $31*16 - (* - chr_bg), 0   ; pad to tile $31
; tile $31: '1'
        .byte %00010000           ; ...1....
        .byte %00110000           ; ..112...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00111000           ; ..111...
        .byte %00000000           ; ...222..
        .byte $00,$08,$08,$08,$08,$08,$00,$1C   ; plane 1
        .res $32*16 - (* - chr_bg), 0   ; pad to tile $32
; tile $32: '2'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %00000100           ; ..2..12.
        .byte %00001000           ; ....1.2.
        .byte %00010000           ; ...1.2..
        .byte %00100000           ; ..1.2...
        .byte %01111100           ; .11111..
        .byte %00000000           ; ..22222.
        .byte $00,$18,$22,$02,$04,$08,$00,$3E   ; plane 1
        .res $33*16 - (* - chr_bg), 0   ; pad to tile $33
; tile $33: '3'
        .byte %01111000           ; .1111...
        .byte %00000100           ; ..2221..
        .byte %00000100           ; .....12.
        .byte %00111000           ; ..111.2.
        .byte %00000100           ; ...221..
        .byte %00000100           ; .....12.
        .byte %01111000           ; .1111.2.
        .byte %00000000           ; ..2222..
        .byte $00,$38,$02,$02,$18,$02,$02,$3C   ; plane 1
        .res $34*16 - (* - chr_bg), 0   ; pad to tile $34
; tile $34: '4'
        .byte %00001000           ; ....1...
        .byte %00011000           ; ...112..
        .byte %00101000           ; ..1.12..
        .byte %01001000           ; .1.212..
        .byte %01111100           ; .11111..
        .byte %00001000           ; ..22122.
        .byte %00001000           ; ....12..
        .byte %00000000           ; .....2..
        .byte $00,$04,$04,$14,$00,$36,$04,$04   ; plane 1
        .res $35*16 - (* - chr_bg), 0   ; pad to tile $35
; tile $35: '5'
        .byte %01111100           ; .11111..
        .byte %01000000           ; .122222.
        .byte %01111000           ; .1111...
        .byte %00000100           ; ..2221..
        .byte %00000100           ; .....12.
        .byte %01000100           ; .1...12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$3E,$00,$38,$02,$02,$02,$1C   ; plane 1
        .res $36*16 - (* - chr_bg), 0   ; pad to tile $36
; tile $36: '6'
        .byte %00111000           ; ..111...
        .byte %01000000           ; .1.222..
        .byte %01000000           ; .12.....
        .byte %01111000           ; .1111...
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$1C,$20,$00,$38,$22,$02,$1C   ; plane 1
        .res $37*16 - (* - chr_bg), 0   ; pad to tile $37
; tile $37: '7'
        .byte %01111100           ; .11111..
        .byte %00000100           ; ..22212.
        .byte %00001000           ; ....1.2.
        .byte %00010000           ; ...1.2..
        .byte %00100000           ; ..1.2...
        .byte %00100000           ; ..12....
        .byte %00100000           ; ..12....
        .byte %00000000           ; ...2....
        .byte $00,$3A,$02,$04,$08,$10,$10,$10   ; plane 1
        .res $38*16 - (* - chr_bg), 0   ; pad to tile $38
; tile $38: '8'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %00111000           ; ..111.2.
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$18,$22,$02,$18,$22,$02,$1C   ; plane 1
        .res $39*16 - (* - chr_bg), 0   ; pad to tile $39
; tile $39: '9'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %00111100           ; ..11112.
        .byte %00000100           ; ...2212.
        .byte %00000100           ; .....12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$18,$22,$02,$1A,$02,$02,$1C   ; plane 1
        .res $3A*16 - (* - chr_bg), 0   ; pad to tile $3A
; tile $3A: ':'
        .byte %00000000           ; ........
        .byte %00010000           ; ...1....
        .byte %00000000           ; ....2...
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00010000           ; ...1....
        .byte %00000000           ; ....2...
        .byte %00000000           ; ........
        .byte $00,$00,$08,$00,$00,$00,$08,$00   ; plane 1
        .res $41*16 - (* - chr_bg), 0   ; pad to tile $41
; tile $41: 'A'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %01111100           ; .111112.
        .byte %01000100           ; .122212.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00000000           ; ..2...2.
        .byte $00,$18,$22,$02,$3A,$22,$22,$22   ; plane 1
        .res $42*16 - (* - chr_bg), 0   ; pad to tile $42
; tile $42: 'B'
        .byte %01111000           ; .1111...
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %01111000           ; .1111.2.
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %01111000           ; .1111.2.
        .byte %00000000           ; ..2222..
        .byte $00,$38,$22,$02,$38,$22,$02,$3C   ; plane 1
        .res $43*16 - (* - chr_bg), 0   ; pad to tile $43
; tile $43: 'C'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000000           ; .12...2.
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %01000100           ; .12..1..
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$18,$22,$20,$20,$20,$02,$1C   ; plane 1
        .res $44*16 - (* - chr_bg), 0   ; pad to tile $44
; tile $44: 'D'
        .byte %01111000           ; .1111...
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01111000           ; .1111.2.
        .byte %00000000           ; ..2222..
        .byte $00,$38,$22,$22,$22,$22,$02,$3C   ; plane 1
        .res $45*16 - (* - chr_bg), 0   ; pad to tile $45
; tile $45: 'E'
        .byte %01111100           ; .11111..
        .byte %01000000           ; .122222.
        .byte %01000000           ; .12.....
        .byte %01111000           ; .1111...
        .byte %01000000           ; .12222..
        .byte %01000000           ; .12.....
        .byte %01111100           ; .11111..
        .byte %00000000           ; ..22222.
        .byte $00,$3E,$20,$00,$3C,$20,$00,$3E   ; plane 1
        .res $46*16 - (* - chr_bg), 0   ; pad to tile $46
; tile $46: 'F'
        .byte %01111100           ; .11111..
        .byte %01000000           ; .122222.
        .byte %01000000           ; .12.....
        .byte %01111000           ; .1111...
        .byte %01000000           ; .12222..
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %00000000           ; ..2.....
        .byte $00,$3E,$20,$00,$3C,$20,$20,$20   ; plane 1
        .res $47*16 - (* - chr_bg), 0   ; pad to tile $47
; tile $47: 'G'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000000           ; .12...2.
        .byte %01011100           ; .12111..
        .byte %01000100           ; .12.212.
        .byte %01000100           ; .12..12.
        .byte %00111100           ; ..11112.
        .byte %00000000           ; ...2222.
        .byte $00,$18,$22,$20,$2A,$22,$02,$1E   ; plane 1
        .res $48*16 - (* - chr_bg), 0   ; pad to tile $48
; tile $48: 'H'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01111100           ; .111112.
        .byte %01000100           ; .122212.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00000000           ; ..2...2.
        .byte $00,$22,$22,$02,$3A,$22,$22,$22   ; plane 1
        .res $49*16 - (* - chr_bg), 0   ; pad to tile $49
; tile $49: 'I'
        .byte %00111000           ; ..111...
        .byte %00010000           ; ...122..
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00111000           ; ..111...
        .byte %00000000           ; ...222..
        .byte $00,$0C,$08,$08,$08,$08,$00,$1C   ; plane 1
        .res $4A*16 - (* - chr_bg), 0   ; pad to tile $4A
; tile $4A: 'J'
        .byte %00011100           ; ...111..
        .byte %00001000           ; ....122.
        .byte %00001000           ; ....12..
        .byte %00001000           ; ....12..
        .byte %01001000           ; .1..12..
        .byte %01001000           ; .12.12..
        .byte %00110000           ; ..11.2..
        .byte %00000000           ; ...22...
        .byte $00,$06,$04,$04,$04,$24,$04,$18   ; plane 1
        .res $4B*16 - (* - chr_bg), 0   ; pad to tile $4B
; tile $4B: 'K'
        .byte %01000100           ; .1...1..
        .byte %01001000           ; .12.1.2.
        .byte %01010000           ; .121.2..
        .byte %01100000           ; .11.2...
        .byte %01010000           ; .121....
        .byte %01001000           ; .12.1...
        .byte %01000100           ; .12..1..
        .byte %00000000           ; ..2...2.
        .byte $00,$22,$24,$08,$20,$20,$20,$22   ; plane 1
        .res $4C*16 - (* - chr_bg), 0   ; pad to tile $4C
; tile $4C: 'L'
        .byte %01000000           ; .1......
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %01111100           ; .11111..
        .byte %00000000           ; ..22222.
        .byte $00,$20,$20,$20,$20,$20,$00,$3E   ; plane 1
        .res $4D*16 - (* - chr_bg), 0   ; pad to tile $4D
; tile $4D: 'M'
        .byte %01000100           ; .1...1..
        .byte %01101100           ; .11.112.
        .byte %01010100           ; .121.12.
        .byte %01010100           ; .121212.
        .byte %01000100           ; .12.212.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00000000           ; ..2...2.
        .byte $00,$02,$22,$2A,$2A,$22,$22,$22   ; plane 1
        .res $4E*16 - (* - chr_bg), 0   ; pad to tile $4E
; tile $4E: 'N'
        .byte %01000100           ; .1...1..
        .byte %01100100           ; .11..12.
        .byte %01010100           ; .121.12.
        .byte %01001100           ; .12.112.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00000000           ; ..2...2.
        .byte $00,$02,$22,$22,$22,$22,$22,$22   ; plane 1
        .res $4F*16 - (* - chr_bg), 0   ; pad to tile $4F
; tile $4F: 'O'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$18,$22,$22,$22,$22,$02,$1C   ; plane 1
        .res $50*16 - (* - chr_bg), 0   ; pad to tile $50
; tile $50: 'P'
        .byte %01111000           ; .1111...
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %01111000           ; .1111.2.
        .byte %01000000           ; .12222..
        .byte %01000000           ; .12.....
        .byte %01000000           ; .12.....
        .byte %00000000           ; ..2.....
        .byte $00,$38,$22,$02,$3C,$20,$20,$20   ; plane 1
        .res $51*16 - (* - chr_bg), 0   ; pad to tile $51
; tile $51: 'Q'
        .byte %00111000           ; ..111...
        .byte %01000100           ; .1.221..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01010100           ; .121.12.
        .byte %01001000           ; .12.1.2.
        .byte %00110100           ; ..11.1..
        .byte %00000000           ; ...22.2.
        .byte $00,$18,$22,$22,$22,$22,$00,$1A   ; plane 1
        .res $52*16 - (* - chr_bg), 0   ; pad to tile $52
; tile $52: 'R'
        .byte %01111000           ; .1111...
        .byte %01000100           ; .12221..
        .byte %01000100           ; .12..12.
        .byte %01111000           ; .1111.2.
        .byte %01010000           ; .12122..
        .byte %01001000           ; .12.1...
        .byte %01000100           ; .12..1..
        .byte %00000000           ; ..2...2.
        .byte $00,$38,$22,$02,$2C,$20,$20,$22   ; plane 1
        .res $53*16 - (* - chr_bg), 0   ; pad to tile $53
; tile $53: 'S'
        .byte %00111100           ; ..1111..
        .byte %01000000           ; .1.2222.
        .byte %01000000           ; .12.....
        .byte %00111000           ; ..111...
        .byte %00000100           ; ...221..
        .byte %00000100           ; .....12.
        .byte %01111000           ; .1111.2.
        .byte %00000000           ; ..2222..
        .byte $00,$1E,$20,$00,$18,$02,$02,$3C   ; plane 1
        .res $54*16 - (* - chr_bg), 0   ; pad to tile $54
; tile $54: 'T'
        .byte %01111100           ; .11111..
        .byte %00010000           ; ..21222.
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00000000           ; ....2...
        .byte $00,$2E,$08,$08,$08,$08,$08,$08   ; plane 1
        .res $55*16 - (* - chr_bg), 0   ; pad to tile $55
; tile $55: 'U'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00111000           ; ..111.2.
        .byte %00000000           ; ...222..
        .byte $00,$22,$22,$22,$22,$22,$02,$1C   ; plane 1
        .res $56*16 - (* - chr_bg), 0   ; pad to tile $56
; tile $56: 'V'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %00101000           ; ..1.1.2.
        .byte %00010000           ; ...1.2..
        .byte %00000000           ; ....2...
        .byte $00,$22,$22,$22,$22,$02,$04,$08   ; plane 1
        .res $57*16 - (* - chr_bg), 0   ; pad to tile $57
; tile $57: 'W'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %01000100           ; .12..12.
        .byte %01010100           ; .121.12.
        .byte %01010100           ; .121212.
        .byte %01101100           ; .11.112.
        .byte %01000100           ; .122.12.
        .byte %00000000           ; ..2...2.
        .byte $00,$22,$22,$22,$2A,$02,$32,$22   ; plane 1
        .res $58*16 - (* - chr_bg), 0   ; pad to tile $58
; tile $58: 'X'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %00101000           ; ..1.1.2.
        .byte %00010000           ; ...1.2..
        .byte %00101000           ; ..1.1...
        .byte %01000100           ; .1.2.1..
        .byte %01000100           ; .12..12.
        .byte %00000000           ; ..2...2.
        .byte $00,$22,$02,$04,$00,$10,$22,$22   ; plane 1
        .res $59*16 - (* - chr_bg), 0   ; pad to tile $59
; tile $59: 'Y'
        .byte %01000100           ; .1...1..
        .byte %01000100           ; .12..12.
        .byte %00101000           ; ..1.1.2.
        .byte %00010000           ; ...1.2..
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00010000           ; ...12...
        .byte %00000000           ; ....2...
        .byte $00,$22,$02,$04,$08,$08,$08,$08   ; plane 1
        .res $5A*16 - (* - chr_bg), 0   ; pad to tile $5A
; tile $5A: 'Z'
        .byte %01111100           ; .11111..
        .byte %00000100           ; ..22212.
        .byte %00001000           ; ....1.2.
        .byte %00010000           ; ...1.2..
        .byte %00100000           ; ..1.2...
        .byte %01000000           ; .1.2....
        .byte %01111100           ; .11111..
        .byte %00000000           ; ..22222.
        .byte $00,$3A,$02,$04,$08,$10,$00,$3E   ; plane 1

        .res $1000 - (* - chr_bg), 0
chr_sp:
; sprite tile $00: sprite 0 marker (one opaque row; drawn behind the bar, so never seen)
        .byte %11111111           ; 11111111
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte %00000000           ; ........
        .byte $00,$00,$00,$00,$00,$00,$00,$00   ; plane 1
; sprite tile $01: ball
        .byte %00111100           ; ..1111..
        .byte %01010010           ; .123221.
        .byte %10110001           ; 12332221
        .byte %10100001           ; 12322221
        .byte %10000001           ; 12222221
        .byte %10000001           ; 12222221
        .byte %01000010           ; .122221.
        .byte %00111100           ; ..1111..
        .byte $00,$3C,$7E,$7E,$7E,$7E,$3C,$00   ; plane 1
; sprite tiles $02-$05: the player, a little robot (16x16) TL
        .byte %00000011           ; ......11
        .byte %00000100           ; .....122
        .byte %00001000           ; ....1222
        .byte %00010110           ; ...12332
        .byte %00010110           ; ...12312
        .byte %00010110           ; ...12332
        .byte %00010000           ; ...12222
        .byte %00001011           ; ....1211
        .byte $00,$03,$07,$0F,$0D,$0F,$0F,$04   ; plane 1
; sprite tiles $02-$05: the player, a little robot (16x16) TR
        .byte %11000000           ; 11......
        .byte %00100000           ; 221.....
        .byte %00010000           ; 2221....
        .byte %01101000           ; 23321...
        .byte %01101000           ; 21321...
        .byte %01101000           ; 23321...
        .byte %00001000           ; 22221...
        .byte %11010000           ; 1121....
        .byte $00,$C0,$E0,$F0,$B0,$F0,$F0,$20   ; plane 1
; sprite tiles $02-$05: the player, a little robot (16x16) BL
        .byte %00000100           ; .....122
        .byte %00011000           ; ...11222
        .byte %00100100           ; ..122122
        .byte %00100100           ; ..122122
        .byte %00110100           ; ..11.122
        .byte %00000100           ; .....12.
        .byte %00001100           ; ....112.
        .byte %00001110           ; ....111.
        .byte $03,$07,$1B,$1B,$03,$02,$02,$00   ; plane 1
; sprite tiles $02-$05: the player, a little robot (16x16) BR
        .byte %00100000           ; 221.....
        .byte %00011000           ; 22211...
        .byte %00100100           ; 221221..
        .byte %00100100           ; 221221..
        .byte %00101100           ; 221.11..
        .byte %00100000           ; .21.....
        .byte %00110000           ; .211....
        .byte %01110000           ; .111....
        .byte $C0,$E0,$D8,$D8,$C0,$40,$40,$00   ; plane 1
