// AVX-512 version of the pair-sum loop of PairWeightedSumExp
// (pairTermsGeneric in pair.go): the generic code's float64 operations in
// the same order, no fused multiply-add, the dot products in the same
// eight lanes (acc entry l in lane l mod 8, one ZMM register) reduced as
// reduceLanes does, so the results are bit-identical.

#include "textflag.h"

// PAIRSCALARS(LZ, LY, LX, W, TY, TX, UX) finishes a term whose weight w is
// in W (the low lane of an XMM register) and whose dot-product lanes are in
// LZ (LY and LX its lower halves): d = the lanes added in reduceLanes'
// order (REDUCE in avx512_amd64.s), t = 2w (as w + w, the bits of 2*w; in
// UX), np (X22) += t*d, pp (X21) += t*s, s (X20) += w. Clobbers LZ and TY
// (TX its lower half), UX.
#define PAIRSCALARS(LZ, LY, LX, W, TY, TX, UX) \
	VEXTRACTF64X4 $1, LZ, TY \
	VADDPD        TY, LY, LY \
	VEXTRACTF128  $1, LY, TX \
	VADDPD        TX, LX, LX \
	VPERMILPD     $1, LX, TX \
	VADDSD        TX, LX, LX \
	VADDSD        W, W, UX \
	VMULSD        LX, UX, LX \
	VADDSD        LX, X22, X22 \
	VMULSD        X20, UX, TX \
	VADDSD        TX, X21, X21 \
	VADDSD        W, X20, X20

// SKIPZERO jumps to skip when the weight at (SI) is +0 or -0 (the generic
// code's w[i] == 0; clobbers AX).
#define SKIPZERO(skip) \
	MOVQ (SI), AX \
	SHLQ $1, AX \
	JZ   skip

// func pairTermsAVX512(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)
//
// For k = len(acc) <= 32, acc stays in Z0-Z3 (masks K1-K4) for the whole
// call. Above, the full chunks of eight entries are read from and written
// back to memory for every two terms, and the last k mod 8 entries stay in
// Z2 (mask K5). The lanes of a term's dot product start at +0 and take the
// chunks' products in order of l; masked-off lanes are left alone (merge
// masking), as the generic code adds nothing to them.
TEXT ·pairTermsAVX512(SB), NOSPLIT, $0-120
	MOVQ   acc_base+0(FP), DI
	MOVQ   acc_len+8(FP), R9
	MOVQ   w_base+24(FP), SI
	MOVQ   w_len+32(FP), R10
	MOVQ   v_base+48(FP), BX
	VMOVSD s+72(FP), X20
	VMOVSD pp+80(FP), X21
	VMOVSD np+88(FP), X22
	MOVQ   R9, R11
	SHLQ   $3, R11
	TESTQ  R10, R10
	JZ     pt_done
	VXORPD Z31, Z31, Z31
	CMPQ   R9, $32
	JA     pt_mem

	// Masks of the k <= 32 entries: K1..K4, eight lanes each.
	MOVQ     R9, CX
	MOVQ     $1, DX
	SHLQ     CX, DX
	DECQ     DX
	KMOVW    DX, K1
	KSHIFTRW $8, K1, K2
	SHRQ     $16, DX
	KMOVW    DX, K3
	KSHIFTRW $8, K3, K4
	CMPQ     R9, $8
	JBE      pt_r1
	CMPQ     R9, $16
	JBE      pt_r2
	VMOVUPD.Z (DI), K1, Z0
	VMOVUPD.Z 64(DI), K2, Z1
	VMOVUPD.Z 128(DI), K3, Z2
	VMOVUPD.Z 192(DI), K4, Z3

pt_r4:
	SKIPZERO(pt_r4s)
	VBROADCASTSD (SI), Z8
	VMOVUPD.Z    (BX), K1, Z4
	VMOVUPD.Z    64(BX), K2, Z5
	VMOVUPD.Z    128(BX), K3, Z6
	VMOVUPD.Z    192(BX), K4, Z7
	VMULPD       Z0, Z4, Z12
	VMULPD       Z1, Z5, Z13
	VMULPD       Z2, Z6, Z14
	VMULPD       Z3, Z7, Z15
	VADDPD.Z     Z12, Z31, K1, Z9
	VADDPD       Z13, Z9, K2, Z9
	VADDPD       Z14, Z9, K3, Z9
	VADDPD       Z15, Z9, K4, Z9
	VMULPD       Z8, Z4, Z4
	VMULPD       Z8, Z5, Z5
	VMULPD       Z8, Z6, Z6
	VMULPD       Z8, Z7, Z7
	VADDPD       Z4, Z0, Z0
	VADDPD       Z5, Z1, Z1
	VADDPD       Z6, Z2, Z2
	VADDPD       Z7, Z3, Z3
	PAIRSCALARS(Z9, Y9, X9, X8, Y10, X10, X11)

pt_r4s:
	ADDQ    $8, SI
	ADDQ    R11, BX
	DECQ    R10
	JNZ     pt_r4
	VMOVUPD Z0, K1, (DI)
	VMOVUPD Z1, K2, 64(DI)
	VMOVUPD Z2, K3, 128(DI)
	VMOVUPD Z3, K4, 192(DI)
	JMP     pt_done

pt_r2:
	VMOVUPD.Z (DI), K1, Z0
	VMOVUPD.Z 64(DI), K2, Z1

pt_r2l:
	SKIPZERO(pt_r2s)
	VBROADCASTSD (SI), Z8
	VMOVUPD.Z    (BX), K1, Z4
	VMOVUPD.Z    64(BX), K2, Z5
	VMULPD       Z0, Z4, Z12
	VMULPD       Z1, Z5, Z13
	VADDPD.Z     Z12, Z31, K1, Z9
	VADDPD       Z13, Z9, K2, Z9
	VMULPD       Z8, Z4, Z4
	VMULPD       Z8, Z5, Z5
	VADDPD       Z4, Z0, Z0
	VADDPD       Z5, Z1, Z1
	PAIRSCALARS(Z9, Y9, X9, X8, Y10, X10, X11)

pt_r2s:
	ADDQ    $8, SI
	ADDQ    R11, BX
	DECQ    R10
	JNZ     pt_r2l
	VMOVUPD Z0, K1, (DI)
	VMOVUPD Z1, K2, 64(DI)
	JMP     pt_done

pt_r1:
	VMOVUPD.Z (DI), K1, Z0

pt_r1l:
	SKIPZERO(pt_r1s)
	VBROADCASTSD (SI), Z8
	VMOVUPD.Z    (BX), K1, Z4
	VMULPD       Z0, Z4, Z12
	VADDPD.Z     Z12, Z31, K1, Z9
	VMULPD       Z8, Z4, Z4
	VADDPD       Z4, Z0, Z0
	PAIRSCALARS(Z9, Y9, X9, X8, Y10, X10, X11)

pt_r1s:
	ADDQ    $8, SI
	ADDQ    R11, BX
	DECQ    R10
	JNZ     pt_r1l
	VMOVUPD Z0, K1, (DI)
	JMP     pt_done

pt_mem:
	// R8 = k/8 full chunks (at least 4), K5 = mask of the k mod 8 left,
	// R14 = 64*R8, their offset; they stay in Z2.
	MOVQ      R9, R8
	SHRQ      $3, R8
	MOVQ      R9, CX
	ANDQ      $7, CX
	MOVQ      $1, DX
	SHLQ      CX, DX
	DECQ      DX
	KMOVW     DX, K5
	MOVQ      R8, R14
	SHLQ      $6, R14
	VMOVUPD.Z (DI)(R14*1), K5, Z2

	// Terms go two at a time (a, then the next term b with a nonzero
	// weight) through one pass over acc: each chunk of acc is read once,
	// takes a's product and update, then b's, and is written back once;
	// the two dot products have their lanes in Z9 and Z10.
pt_m:
	TESTQ R10, R10
	JZ    pt_mend
	MOVQ  (SI), AX
	SHLQ  $1, AX
	JNZ   pt_ma
	ADDQ  $8, SI
	ADDQ  R11, BX
	DECQ  R10
	JMP   pt_m

pt_ma:
	// Term a is at SI (weight) and BX (row); look for b.
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, CX

pt_mb:
	DECQ CX
	JZ   pt_one
	ADDQ $8, R12
	ADDQ R11, R13
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   pt_mb

	// b is at R12 and R13, CX terms from b on. DX = row b - row a.
	VBROADCASTSD (SI), Z8
	VBROADCASTSD (R12), Z7
	MOVQ         R12, SI
	MOVQ         CX, R10
	MOVQ         R13, DX
	SUBQ         BX, DX
	VXORPD       Z9, Z9, Z9
	VXORPD       Z10, Z10, Z10
	MOVQ         DI, R12
	MOVQ         BX, R13
	MOVQ         R8, CX

pt_m2c:
	VMOVUPD (R12), Z0
	VMOVUPD (R13), Z4
	VMOVUPD (R13)(DX*1), Z5
	VMULPD  Z0, Z4, Z12
	VADDPD  Z12, Z9, Z9
	VMULPD  Z8, Z4, Z4
	VADDPD  Z4, Z0, Z0
	VMULPD  Z0, Z5, Z13
	VADDPD  Z13, Z10, Z10
	VMULPD  Z7, Z5, Z5
	VADDPD  Z5, Z0, Z0
	VMOVUPD Z0, (R12)
	ADDQ    $64, R12
	ADDQ    $64, R13
	DECQ    CX
	JNZ     pt_m2c
	VMOVUPD.Z (R13), K5, Z4
	VMOVUPD.Z (R13)(DX*1), K5, Z5
	VMULPD    Z2, Z4, Z12
	VADDPD    Z12, Z9, K5, Z9
	VMULPD    Z8, Z4, Z4
	VADDPD    Z4, Z2, Z2
	VMULPD    Z2, Z5, Z13
	VADDPD    Z13, Z10, K5, Z10
	VMULPD    Z7, Z5, Z5
	VADDPD    Z5, Z2, Z2
	PAIRSCALARS(Z9, Y9, X9, X8, Y11, X11, X12)
	PAIRSCALARS(Z10, Y10, X10, X7, Y11, X11, X12)
	ADDQ         $8, SI
	ADDQ         DX, BX
	ADDQ         R11, BX
	DECQ         R10
	JMP          pt_m

pt_one:
	// Term a is the last with a nonzero weight.
	VBROADCASTSD (SI), Z8
	VXORPD       Z9, Z9, Z9
	MOVQ         DI, R12
	MOVQ         BX, R13
	MOVQ         R8, CX

pt_m1c:
	VMOVUPD (R13), Z4
	VMOVUPD (R12), Z0
	VMULPD  Z0, Z4, Z12
	VADDPD  Z12, Z9, Z9
	VMULPD  Z8, Z4, Z4
	VADDPD  Z4, Z0, Z0
	VMOVUPD Z0, (R12)
	ADDQ    $64, R12
	ADDQ    $64, R13
	DECQ    CX
	JNZ     pt_m1c
	VMOVUPD.Z (R13), K5, Z6
	VMULPD    Z2, Z6, Z14
	VADDPD    Z14, Z9, K5, Z9
	VMULPD    Z8, Z6, Z6
	VADDPD    Z6, Z2, Z2
	PAIRSCALARS(Z9, Y9, X9, X8, Y10, X10, X11)

pt_mend:
	VMOVUPD Z2, K5, (DI)(R14*1)

pt_done:
	VMOVSD X20, ret+96(FP)
	VMOVSD X21, ret1+104(FP)
	VMOVSD X22, ret2+112(FP)
	VZEROUPPER
	RET
