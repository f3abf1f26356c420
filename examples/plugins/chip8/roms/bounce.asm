; bounce.ch8: our CHIP-8 demo (assembled by assemble.py into bounce.ch8). A digit bounces around the screen,
; changing to a random digit at each wall; a counter at the top left counts the bounces in BCD; holding key 5
; beeps and freezes the digit; the delay timer paces each frame. Uses CLS, DXYN, 7XNN, 8XY4, 8XY5, 3XNN,
; 4XNN, 6XNN, AXNN via FX29, CXNN, FX15/FX07, FX18, FX33, FX65, EX9E, 2NNN/00EE, 1NNN.
start:  CLS
        LD V0, 28        ; x
        LD V1, 12        ; y
        LD V2, 1         ; dx
        LD V3, 1         ; dy
        LD V6, 0         ; bounces
        LD V7, 5         ; digit shown
        LD VB, 0         ; one
        CALL score
loop:   LD F, V7
        DRW V0, V1, 5    ; draw
        LD VA, 2
        LD DT, VA        ; wait two ticks
wait:   LD VA, DT
        SE VA, 0
        JP wait
        DRW V0, V1, 5    ; erase
        LD VA, 5
        SKNP VA          ; key 5 held: beep, stay
        JP held
        ADD V0, V2
        ADD V1, V3
        SE V0, 0         ; left wall
        JP right
        LD V2, 1
        CALL bounce
right:  SE V0, 59
        JP top
        LD V2, 255
        CALL bounce
top:    SE V1, 0
        JP bottom
        LD V3, 1
        CALL bounce
bottom: SE V1, 26
        JP loop
        LD V3, 255
        CALL bounce
        JP loop
held:   LD VA, 4
        LD ST, VA
        JP loop
bounce: RND V7, 15       ; a new hex digit (10 becomes 0)
        SNE V7, 10
        LD V7, 0
        CALL score       ; erase the old count
        ADD V6, 1
        CALL score       ; draw the new one
        RET
score:  LD I, bcd
        LD B, V6
        ; hundreds, tens, ones into V0..V2: keep x, y, dx in VC..VE
        LD VC, V0
        LD VD, V1
        LD VE, V2
        LD V2, [I]
        LD V8, 0
        LD V9, 0
        LD F, V0
        DRW V8, V9, 5
        LD V8, 5
        LD F, V1
        DRW V8, V9, 5
        LD V8, 10
        LD F, V2
        DRW V8, V9, 5
        LD V0, VC
        LD V1, VD
        LD V2, VE
        RET
bcd:    DB 0, 0, 0
