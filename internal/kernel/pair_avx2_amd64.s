// AVX2 version of the pair-sum loop of PairWeightedSumExp
// (pairTermsGeneric in pair.go): the generic code's float64 operations in
// the same order, no fused multiply-add, the dot products in the same
// eight lanes (acc entry l in lane l mod 8: lanes 0-3 in Y4, lanes 4-7 in
// Y5) reduced as reduceLanes does, so the results are bit-identical.
// Masked loads and stores are VMASKMOVPD (which does not fault on masked
// lanes); a masked-off lane's product is cleared before it is added to its
// lane, and adding +0 leaves a lane unchanged (a lane that starts at +0
// never becomes -0).

#include "textflag.h"

// pairmask<>: 8 lanes of all ones, then 8 of zeros. The 8 qwords from
// pairmask<>+(8-n)*8 are the lane masks of the first n of 8 elements
// (0 <= n <= 8).
DATA pairmask<>+0(SB)/8, $-1
DATA pairmask<>+8(SB)/8, $-1
DATA pairmask<>+16(SB)/8, $-1
DATA pairmask<>+24(SB)/8, $-1
DATA pairmask<>+32(SB)/8, $-1
DATA pairmask<>+40(SB)/8, $-1
DATA pairmask<>+48(SB)/8, $-1
DATA pairmask<>+56(SB)/8, $-1
DATA pairmask<>+64(SB)/8, $0
DATA pairmask<>+72(SB)/8, $0
DATA pairmask<>+80(SB)/8, $0
DATA pairmask<>+88(SB)/8, $0
DATA pairmask<>+96(SB)/8, $0
DATA pairmask<>+104(SB)/8, $0
DATA pairmask<>+112(SB)/8, $0
DATA pairmask<>+120(SB)/8, $0
GLOBL pairmask<>(SB), RODATA|NOPTR, $128

// PAIRSCALARS finishes a term whose weight w is in X6 (and every lane of
// Y6) and whose dot-product lanes are in Y4 (0-3) and Y5 (4-7): d = the
// lanes added in reduceLanes' order (REDUCE in avx2_amd64.s), t = 2w (as
// w + w, the bits of 2*w; X11), np (X14) += t*d, pp (X13) += t*s, s (X12)
// += w. Clobbers Y4, Y5, Y7, Y11.
#define PAIRSCALARS \
	VADDPD       Y5, Y4, Y4 \
	VEXTRACTF128 $1, Y4, X5 \
	VADDPD       X5, X4, X4 \
	VPERMILPD    $1, X4, X5 \
	VADDSD       X5, X4, X4 \
	VADDSD       X6, X6, X11 \
	VMULSD       X4, X11, X4 \
	VADDSD       X4, X14, X14 \
	VMULSD       X12, X11, X7 \
	VADDSD       X7, X13, X13 \
	VADDSD       X6, X12, X12

// SKIPZERO jumps to skip when the weight at (SI) is +0 or -0 (the generic
// code's w[i] == 0; clobbers AX).
#define SKIPZERO(skip) \
	MOVQ (SI), AX \
	SHLQ $1, AX \
	JZ   skip

// NEXTTERM steps to the next term and loops to loop while terms are left.
#define NEXTTERM(loop) \
	ADDQ $8, SI \
	ADDQ R11, BX \
	DECQ R10 \
	JNZ  loop

// func pairTermsAVX2(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)
//
// For k = len(acc) <= 16, acc stays in Y0-Y3 (q = max(1, ceil(k/4))
// registers, the last one masked by Y15) for the whole call. Above, the
// full chunks of eight entries are read from and written back to memory
// for every term, and the last k mod 8 entries stay in Y0 and Y1 (masks
// Y2, Y3).
TEXT ·pairTermsAVX2(SB), NOSPLIT, $0-120
	MOVQ   acc_base+0(FP), DI
	MOVQ   acc_len+8(FP), R9
	MOVQ   w_base+24(FP), SI
	MOVQ   w_len+32(FP), R10
	MOVQ   v_base+48(FP), BX
	VMOVSD s+72(FP), X12
	VMOVSD pp+80(FP), X13
	VMOVSD np+88(FP), X14
	MOVQ   R9, R11
	SHLQ   $3, R11
	TESTQ  R10, R10
	JZ     pt_done
	LEAQ   pairmask<>(SB), DX
	CMPQ   R9, $16
	JA     pt_mem

	// Y15 = the lane mask of the last register: its k - 4(q-1) entries.
	MOVQ    R9, CX
	CMPQ    CX, $4
	JBE     pt_mask
	SUBQ    $4, CX
	CMPQ    CX, $4
	JBE     pt_mask
	SUBQ    $4, CX
	CMPQ    CX, $4
	JBE     pt_mask
	SUBQ    $4, CX

pt_mask:
	MOVQ    $8, AX
	SUBQ    CX, AX
	VMOVDQU (DX)(AX*8), Y15
	CMPQ    R9, $4
	JBE     pt_r1
	CMPQ    R9, $8
	JBE     pt_r2
	CMPQ    R9, $12
	JBE     pt_r3
	VMOVUPD    0(DI), Y0
	VMOVUPD    32(DI), Y1
	VMOVUPD    64(DI), Y2
	VMASKMOVPD 96(DI), Y15, Y3

pt_r4l:
	SKIPZERO(pt_r4s)
	VBROADCASTSD (SI), Y6
	VMOVUPD      0(BX), Y7
	VMOVUPD      32(BX), Y8
	VMOVUPD      64(BX), Y9
	VMASKMOVPD   96(BX), Y15, Y10
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VMULPD       Y0, Y7, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y1, Y8, Y11
	VADDPD       Y11, Y5, Y5
	VMULPD       Y2, Y9, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y3, Y10, Y11
	VANDPD       Y15, Y11, Y11
	VADDPD       Y11, Y5, Y5
	VMULPD       Y6, Y7, Y7
	VADDPD       Y7, Y0, Y0
	VMULPD       Y6, Y8, Y8
	VADDPD       Y8, Y1, Y1
	VMULPD       Y6, Y9, Y9
	VADDPD       Y9, Y2, Y2
	VMULPD       Y6, Y10, Y10
	VADDPD       Y10, Y3, Y3
	PAIRSCALARS

pt_r4s:
	NEXTTERM(pt_r4l)
	VMOVUPD    Y0, 0(DI)
	VMOVUPD    Y1, 32(DI)
	VMOVUPD    Y2, 64(DI)
	VMASKMOVPD Y3, Y15, 96(DI)
	JMP        pt_done

pt_r3:
	VMOVUPD    0(DI), Y0
	VMOVUPD    32(DI), Y1
	VMASKMOVPD 64(DI), Y15, Y2

pt_r3l:
	SKIPZERO(pt_r3s)
	VBROADCASTSD (SI), Y6
	VMOVUPD      0(BX), Y7
	VMOVUPD      32(BX), Y8
	VMASKMOVPD   64(BX), Y15, Y9
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VMULPD       Y0, Y7, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y1, Y8, Y11
	VADDPD       Y11, Y5, Y5
	VMULPD       Y2, Y9, Y11
	VANDPD       Y15, Y11, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y6, Y7, Y7
	VADDPD       Y7, Y0, Y0
	VMULPD       Y6, Y8, Y8
	VADDPD       Y8, Y1, Y1
	VMULPD       Y6, Y9, Y9
	VADDPD       Y9, Y2, Y2
	PAIRSCALARS

pt_r3s:
	NEXTTERM(pt_r3l)
	VMOVUPD    Y0, 0(DI)
	VMOVUPD    Y1, 32(DI)
	VMASKMOVPD Y2, Y15, 64(DI)
	JMP        pt_done

pt_r2:
	VMOVUPD    0(DI), Y0
	VMASKMOVPD 32(DI), Y15, Y1

pt_r2l:
	SKIPZERO(pt_r2s)
	VBROADCASTSD (SI), Y6
	VMOVUPD      0(BX), Y7
	VMASKMOVPD   32(BX), Y15, Y8
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VMULPD       Y0, Y7, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y1, Y8, Y11
	VANDPD       Y15, Y11, Y11
	VADDPD       Y11, Y5, Y5
	VMULPD       Y6, Y7, Y7
	VADDPD       Y7, Y0, Y0
	VMULPD       Y6, Y8, Y8
	VADDPD       Y8, Y1, Y1
	PAIRSCALARS

pt_r2s:
	NEXTTERM(pt_r2l)
	VMOVUPD    Y0, 0(DI)
	VMASKMOVPD Y1, Y15, 32(DI)
	JMP        pt_done

pt_r1:
	VMASKMOVPD 0(DI), Y15, Y0

pt_r1l:
	SKIPZERO(pt_r1s)
	VBROADCASTSD (SI), Y6
	VMASKMOVPD   0(BX), Y15, Y7
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	VMULPD       Y0, Y7, Y11
	VANDPD       Y15, Y11, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y6, Y7, Y7
	VADDPD       Y7, Y0, Y0
	PAIRSCALARS

pt_r1s:
	NEXTTERM(pt_r1l)
	VMASKMOVPD Y0, Y15, 0(DI)
	JMP        pt_done

pt_mem:
	// R8 = k/8 full chunks (at least 2); the k mod 8 = R14 entries left
	// (at offset 64*R8) stay in Y0 and Y1, with lane masks Y2 and Y3.
	MOVQ       R9, R8
	SHRQ       $3, R8
	MOVQ       R9, R14
	ANDQ       $7, R14
	MOVQ       $8, AX
	SUBQ       R14, AX
	VMOVDQU    (DX)(AX*8), Y2
	VMOVDQU    32(DX)(AX*8), Y3
	MOVQ       R8, AX
	SHLQ       $6, AX
	VMASKMOVPD (DI)(AX*1), Y2, Y0
	VMASKMOVPD 32(DI)(AX*1), Y3, Y1

pt_m:
	SKIPZERO(pt_ms)
	VBROADCASTSD (SI), Y6
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5
	MOVQ         DI, R12
	MOVQ         BX, R13
	MOVQ         R8, CX

pt_mc:
	VMOVUPD (R13), Y7
	VMOVUPD 32(R13), Y8
	VMOVUPD (R12), Y9
	VMOVUPD 32(R12), Y10
	VMULPD  Y9, Y7, Y11
	VADDPD  Y11, Y4, Y4
	VMULPD  Y10, Y8, Y11
	VADDPD  Y11, Y5, Y5
	VMULPD  Y6, Y7, Y7
	VADDPD  Y7, Y9, Y9
	VMULPD  Y6, Y8, Y8
	VADDPD  Y8, Y10, Y10
	VMOVUPD Y9, (R12)
	VMOVUPD Y10, 32(R12)
	ADDQ    $64, R12
	ADDQ    $64, R13
	DECQ    CX
	JNZ     pt_mc
	TESTQ   R14, R14
	JZ      pt_mt
	VMASKMOVPD (R13), Y2, Y7
	VMASKMOVPD 32(R13), Y3, Y8
	VMULPD     Y0, Y7, Y11
	VANDPD     Y2, Y11, Y11
	VADDPD     Y11, Y4, Y4
	VMULPD     Y1, Y8, Y11
	VANDPD     Y3, Y11, Y11
	VADDPD     Y11, Y5, Y5
	VMULPD     Y6, Y7, Y7
	VADDPD     Y7, Y0, Y0
	VMULPD     Y6, Y8, Y8
	VADDPD     Y8, Y1, Y1

pt_mt:
	PAIRSCALARS

pt_ms:
	NEXTTERM(pt_m)
	MOVQ       R8, AX
	SHLQ       $6, AX
	VMASKMOVPD Y0, Y2, (DI)(AX*1)
	VMASKMOVPD Y1, Y3, 32(DI)(AX*1)

pt_done:
	VMOVSD X12, ret+96(FP)
	VMOVSD X13, ret1+104(FP)
	VMOVSD X14, ret2+112(FP)
	VZEROUPPER
	RET
