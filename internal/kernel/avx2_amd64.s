// AVX2 (and FMA) versions of the generic loops in generic.go. Each
// performs the generic code's float64 operations in the same order (fused
// multiply-adds exactly where expInto has math.FMA, none elsewhere) and
// keeps sums in the same eight lanes (element i in lane i mod 8: lanes 0-3
// in one YMM register, lanes 4-7 in another), so the
// results are bit-identical. The structure follows avx512_amd64.s; where
// that code uses mask registers this code uses lane masks in YMM registers
// (masked loads and stores by VMASKMOVPD, which does not fault on masked
// lanes).

#include "textflag.h"

// expmask3<>: 3 in each lane (the table index within a half of the table).
DATA expmask3<>+0(SB)/8, $3
DATA expmask3<>+8(SB)/8, $3
DATA expmask3<>+16(SB)/8, $3
DATA expmask3<>+24(SB)/8, $3
GLOBL expmask3<>(SB), RODATA|NOPTR, $32

// dwordodd<>: 0 in the low and 1 in the high doubleword of each lane.
DATA dwordodd<>+0(SB)/8, $0x0000000100000000
DATA dwordodd<>+8(SB)/8, $0x0000000100000000
DATA dwordodd<>+16(SB)/8, $0x0000000100000000
DATA dwordodd<>+24(SB)/8, $0x0000000100000000
GLOBL dwordodd<>(SB), RODATA|NOPTR, $32

// neginf<>: -Inf in each lane.
DATA neginf<>+0(SB)/8, $0xfff0000000000000
DATA neginf<>+8(SB)/8, $0xfff0000000000000
DATA neginf<>+16(SB)/8, $0xfff0000000000000
DATA neginf<>+24(SB)/8, $0xfff0000000000000
GLOBL neginf<>(SB), RODATA|NOPTR, $32

// tailmask<>: 16 lanes of all ones, then 16 of zeros. The 16 qwords from
// tailmask<>+(16-n)*8 are the lane masks of the first n of 16 elements.
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $-1
DATA tailmask<>+40(SB)/8, $-1
DATA tailmask<>+48(SB)/8, $-1
DATA tailmask<>+56(SB)/8, $-1
DATA tailmask<>+64(SB)/8, $-1
DATA tailmask<>+72(SB)/8, $-1
DATA tailmask<>+80(SB)/8, $-1
DATA tailmask<>+88(SB)/8, $-1
DATA tailmask<>+96(SB)/8, $-1
DATA tailmask<>+104(SB)/8, $-1
DATA tailmask<>+112(SB)/8, $-1
DATA tailmask<>+120(SB)/8, $-1
DATA tailmask<>+128(SB)/8, $0
DATA tailmask<>+136(SB)/8, $0
DATA tailmask<>+144(SB)/8, $0
DATA tailmask<>+152(SB)/8, $0
DATA tailmask<>+160(SB)/8, $0
DATA tailmask<>+168(SB)/8, $0
DATA tailmask<>+176(SB)/8, $0
DATA tailmask<>+184(SB)/8, $0
DATA tailmask<>+192(SB)/8, $0
DATA tailmask<>+200(SB)/8, $0
DATA tailmask<>+208(SB)/8, $0
DATA tailmask<>+216(SB)/8, $0
DATA tailmask<>+224(SB)/8, $0
DATA tailmask<>+232(SB)/8, $0
DATA tailmask<>+240(SB)/8, $0
DATA tailmask<>+248(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $256

// TAILPTR points DX at the lane masks of the first CX of 16 elements
// (0 <= CX <= 16; clobbers AX): 32(DX) holds those of elements 4-7, and
// so on.
#define TAILPTR \
	MOVQ $16, AX \
	SUBQ CX, AX \
	LEAQ tailmask<>(SB), DX \
	LEAQ (DX)(AX*8), DX

// LOADEXP loads the exponential's constants kept in registers: Y12
// invLn2N, Y11 roundMagic, Y13 ExpMin. The others are read from expConst4
// (see simd_amd64.go: row i at 32*i).
#define LOADEXP \
	VMOVUPD ·expConst4+0(SB), Y12 \
	VMOVUPD ·expConst4+32(SB), Y11 \
	VMOVUPD ·expConst4+384(SB), Y13

// EXP4 replaces V by e^V (Exp's operations, lane by lane), 0 where V <
// ExpMin or NaN. T, KF, R, Q, K are scratch registers. The table entry
// 2^(j/8), j the low 3 bits of T's lanes, is looked up without a gather
// (microcoded and slow on AMD Zen 1 to 3 and many Intel cores): each half
// of the 8-entry table is one YMM register of 8 doublewords, VPERMD picks
// the doubleword pair 2(j & 3), 2(j & 3) + 1 from both halves, and
// VBLENDVPD takes the upper half's where bit 2 of j (moved to the sign
// bit) is set.
#define EXP4(V, T, KF, R, Q, K) \
	VCMPPD $0x1d, Y13, V, K \
	VMOVAPD V, T \
	VFMADD213PD Y11, Y12, T \
	VSUBPD Y11, T, KF \
	VMOVAPD V, R \
	VFNMADD231PD ·expConst4+64(SB), KF, R \
	VFNMADD231PD ·expConst4+96(SB), KF, R \
	VMOVUPD ·expConst4+160(SB), Q \
	VFMADD231PD ·expConst4+128(SB), R, Q \
	VFMADD213PD ·expConst4+192(SB), R, Q \
	VFMADD213PD ·expConst4+224(SB), R, Q \
	VFMADD213PD ·expConst4+256(SB), R, Q \
	VFMADD213PD ·expConst4+288(SB), R, Q \
	VFMADD213PD ·expConst4+320(SB), R, Q \
	VFMADD213PD ·expConst4+352(SB), R, Q \
	VMULPD R, Q, Q \
	VPAND expmask3<>(SB), T, R \
	VPADDQ R, R, R \
	VPSHUFD $0xa0, R, R \
	VPADDD dwordodd<>(SB), R, R \
	VPERMD ·exp2Table+0(SB), R, KF \
	VPERMD ·exp2Table+32(SB), R, R \
	VPSLLQ $61, T, V \
	VBLENDVPD V, R, KF, KF \
	VFMADD213PD KF, KF, Q \
	VPSRLQ $3, T, T \
	VPSLLQ $52, T, T \
	VPADDQ T, Q, Q \
	VPAND K, Q, V

// GROUPTEST sets ZF iff all 16 elements at SI are below the cut Y14
// (clobbers Y2-Y5). Predicate 0x0a (NGT_US) with the cut first is !(cut >
// x) = !(x < cut), true for NaN: the generic allBelow's test.
#define GROUPTEST \
	VCMPPD $0x0a, 0(SI), Y14, Y2 \
	VCMPPD $0x0a, 32(SI), Y14, Y3 \
	VCMPPD $0x0a, 64(SI), Y14, Y4 \
	VCMPPD $0x0a, 96(SI), Y14, Y5 \
	VORPD Y3, Y2, Y2 \
	VORPD Y5, Y4, Y4 \
	VORPD Y4, Y2, Y2 \
	VPTEST Y2, Y2

// TAILTEST is GROUPTEST for the first CX < 16 elements at SI, with DX
// from TAILPTR (clobbers Y2-Y5, Y8; reads only those elements).
#define TAILTEST \
	VMOVDQU 0(DX), Y8 \
	VMASKMOVPD 0(SI), Y8, Y2 \
	VCMPPD $5, Y14, Y2, Y2 \
	VPAND Y8, Y2, Y2 \
	VMOVDQU 32(DX), Y8 \
	VMASKMOVPD 32(SI), Y8, Y3 \
	VCMPPD $5, Y14, Y3, Y3 \
	VPAND Y8, Y3, Y3 \
	VMOVDQU 64(DX), Y8 \
	VMASKMOVPD 64(SI), Y8, Y4 \
	VCMPPD $5, Y14, Y4, Y4 \
	VPAND Y8, Y4, Y4 \
	VMOVDQU 96(DX), Y8 \
	VMASKMOVPD 96(SI), Y8, Y5 \
	VCMPPD $5, Y14, Y5, Y5 \
	VPAND Y8, Y5, Y5 \
	VORPD Y3, Y2, Y2 \
	VORPD Y5, Y4, Y4 \
	VORPD Y4, Y2, Y2 \
	VPTEST Y2, Y2

// EXPAT sets Y2 to e^(x - shift) for the four elements at off(SI), shift
// in Y15 (clobbers Y3-Y7).
#define EXPAT(off) \
	VMOVUPD off(SI), Y2 \
	VSUBPD Y15, Y2, Y2 \
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7)

// TAILEXPAT is EXPAT for the elements of off(SI) that exist (lane masks
// at off(DX), left in Y8), 0 in the other lanes.
#define TAILEXPAT(off) \
	VMOVDQU off(DX), Y8 \
	VMASKMOVPD off(SI), Y8, Y2 \
	VSUBPD Y15, Y2, Y2 \
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7) \
	VPAND Y8, Y2, Y2

// REDUCE leaves in X0 the sum of the eight lanes Y0 (0-3) and Y1 (4-7) in
// reduceLanes' order (clobbers Y1).
#define REDUCE \
	VADDPD Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPD X1, X0, X0 \
	VPERMILPD $1, X0, X1 \
	VADDSD X1, X0, X0

// MAXREDUCE leaves in X0 the maximum of Y0's lanes (clobbers Y1).
#define MAXREDUCE \
	VEXTRACTF128 $1, Y0, X1 \
	VMAXPD X0, X1, X0 \
	VPERMILPD $1, X0, X1 \
	VMAXSD X0, X1, X0

// func sumExpAVX2(x []float64, shift, cut float64) float64
TEXT ·sumExpAVX2(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD shift+24(FP), Y15
	VBROADCASTSD cut+32(FP), Y14
	LOADEXP
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

se_group:
	CMPQ CX, $16
	JB   se_tail
	GROUPTEST
	JZ   se_next
	EXPAT(0)
	VADDPD Y2, Y0, Y0
	EXPAT(32)
	VADDPD Y2, Y1, Y1
	EXPAT(64)
	VADDPD Y2, Y0, Y0
	EXPAT(96)
	VADDPD Y2, Y1, Y1

se_next:
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  se_group

se_tail:
	TESTQ CX, CX
	JZ    se_done
	TAILPTR
	TAILTEST
	JZ    se_done
	TAILEXPAT(0)
	VADDPD Y2, Y0, Y0
	TAILEXPAT(32)
	VADDPD Y2, Y1, Y1
	TAILEXPAT(64)
	VADDPD Y2, Y0, Y0
	TAILEXPAT(96)
	VADDPD Y2, Y1, Y1

se_done:
	REDUCE
	VMOVSD X0, ret+40(FP)
	VZEROUPPER
	RET

// func sumExpSqAVX2(x []float64, shift, cut float64) (s, sq float64)
TEXT ·sumExpSqAVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD shift+24(FP), Y15
	VBROADCASTSD cut+32(FP), Y14
	LOADEXP
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10

sq_group:
	CMPQ CX, $16
	JB   sq_tail
	GROUPTEST
	JZ   sq_next
	EXPAT(0)
	VADDPD Y2, Y0, Y0
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y9, Y9
	EXPAT(32)
	VADDPD Y2, Y1, Y1
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y10, Y10
	EXPAT(64)
	VADDPD Y2, Y0, Y0
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y9, Y9
	EXPAT(96)
	VADDPD Y2, Y1, Y1
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y10, Y10

sq_next:
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  sq_group

sq_tail:
	TESTQ CX, CX
	JZ    sq_done
	TAILPTR
	TAILTEST
	JZ    sq_done
	TAILEXPAT(0)
	VADDPD Y2, Y0, Y0
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y9, Y9
	TAILEXPAT(32)
	VADDPD Y2, Y1, Y1
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y10, Y10
	TAILEXPAT(64)
	VADDPD Y2, Y0, Y0
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y9, Y9
	TAILEXPAT(96)
	VADDPD Y2, Y1, Y1
	VMULPD Y2, Y2, Y3
	VADDPD Y3, Y10, Y10

sq_done:
	REDUCE
	VMOVSD X0, s+40(FP)
	VMOVAPD Y9, Y0
	VMOVAPD Y10, Y1
	REDUCE
	VMOVSD X0, sq+48(FP)
	VZEROUPPER
	RET

// func expTermsAVX2(dst, x []float64, shift, cut float64, lanes *[8]float64)
TEXT ·expTermsAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	VBROADCASTSD shift+48(FP), Y15
	VBROADCASTSD cut+56(FP), Y14
	MOVQ lanes+64(FP), R9
	LOADEXP
	VMOVUPD 0(R9), Y0
	VMOVUPD 32(R9), Y1

et_loop:
	CMPQ CX, $8
	JB   et_tail
	// Eight terms all below the cut (or NaN) are zeros without their
	// exponentials; adding those zeros to the lanes would change nothing.
	// Predicate 0x12 (LE_OQ) with the cut first is cut <= x: x >= cut.
	VCMPPD $0x12, 0(SI), Y14, Y9
	VCMPPD $0x12, 32(SI), Y14, Y10
	VORPD  Y10, Y9, Y3
	VPTEST Y3, Y3
	JNZ    et_some
	VXORPD  Y2, Y2, Y2
	VMOVUPD Y2, 0(DI)
	VMOVUPD Y2, 32(DI)
	JMP     et_next

et_some:
	VMOVUPD 0(SI), Y2
	VSUBPD Y15, Y2, Y2
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7)
	VPAND Y9, Y2, Y2
	VMOVUPD Y2, 0(DI)
	VADDPD Y2, Y0, Y0
	VMOVUPD 32(SI), Y2
	VSUBPD Y15, Y2, Y2
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7)
	VPAND Y10, Y2, Y2
	VMOVUPD Y2, 32(DI)
	VADDPD Y2, Y1, Y1

et_next:
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  et_loop

et_tail:
	TESTQ CX, CX
	JZ    et_done
	TAILPTR
	VMOVDQU 0(DX), Y8
	VMASKMOVPD 0(SI), Y8, Y2
	VCMPPD $0x1d, Y14, Y2, Y9
	VPAND Y8, Y9, Y9
	VSUBPD Y15, Y2, Y2
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7)
	VPAND Y9, Y2, Y2
	VMASKMOVPD Y2, Y8, 0(DI)
	VADDPD Y2, Y0, Y0
	CMPQ CX, $4
	JBE  et_done
	VMOVDQU 32(DX), Y8
	VMASKMOVPD 32(SI), Y8, Y2
	VCMPPD $0x1d, Y14, Y2, Y9
	VPAND Y8, Y9, Y9
	VSUBPD Y15, Y2, Y2
	EXP4(Y2, Y3, Y4, Y5, Y6, Y7)
	VPAND Y9, Y2, Y2
	VMASKMOVPD Y2, Y8, 32(DI)
	VADDPD Y2, Y1, Y1

et_done:
	VMOVUPD Y0, 0(R9)
	VMOVUPD Y1, 32(R9)
	VZEROUPPER
	RET

// func affineMaxAVX2(dst, x, c []float64, scale float64) float64
//
// The maxima are taken as new > old ? new : old lane by lane (VMAXPD with
// the new value first), the generic code's test.
TEXT ·affineMaxAVX2(SB), NOSPLIT, $0-88
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ c_base+48(FP), R9
	VBROADCASTSD scale+72(FP), Y15
	VMOVUPD neginf<>(SB), Y0
	VMOVAPD Y0, Y1

am_8:
	CMPQ CX, $8
	JB   am_4
	VMULPD 0(SI), Y15, Y2
	VMULPD 32(SI), Y15, Y3
	VSUBPD 0(R9), Y2, Y2
	VSUBPD 32(R9), Y3, Y3
	VMOVUPD Y2, 0(DI)
	VMOVUPD Y3, 32(DI)
	VMAXPD Y0, Y2, Y0
	VMAXPD Y1, Y3, Y1
	ADDQ $64, SI
	ADDQ $64, R9
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  am_8

am_4:
	VMAXPD Y0, Y1, Y0
	CMPQ CX, $4
	JB   am_tail
	VMULPD 0(SI), Y15, Y2
	VSUBPD 0(R9), Y2, Y2
	VMOVUPD Y2, 0(DI)
	VMAXPD Y0, Y2, Y0
	ADDQ $32, SI
	ADDQ $32, R9
	ADDQ $32, DI
	SUBQ $4, CX

am_tail:
	TESTQ CX, CX
	JZ    am_done
	TAILPTR
	VMOVDQU 0(DX), Y8
	VMASKMOVPD 0(SI), Y8, Y2
	VMASKMOVPD 0(R9), Y8, Y3
	VMULPD Y15, Y2, Y2
	VSUBPD Y3, Y2, Y2
	VMASKMOVPD Y2, Y8, 0(DI)
	VMAXPD Y0, Y2, Y3
	VBLENDVPD Y8, Y3, Y0, Y0

am_done:
	MAXREDUCE
	VMOVSD X0, ret+80(FP)
	VZEROUPPER
	RET

// func maxAVX2(x []float64) float64
TEXT ·maxAVX2(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VMOVUPD neginf<>(SB), Y0
	VMOVAPD Y0, Y1
	VMOVAPD Y0, Y2
	VMOVAPD Y0, Y3

mx_16:
	CMPQ CX, $16
	JB   mx_4
	VMOVUPD 0(SI), Y4
	VMOVUPD 32(SI), Y5
	VMOVUPD 64(SI), Y6
	VMOVUPD 96(SI), Y7
	VMAXPD Y0, Y4, Y0
	VMAXPD Y1, Y5, Y1
	VMAXPD Y2, Y6, Y2
	VMAXPD Y3, Y7, Y3
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  mx_16

mx_4:
	VMAXPD Y0, Y1, Y0
	VMAXPD Y2, Y3, Y2
	VMAXPD Y0, Y2, Y0

mx_4loop:
	CMPQ CX, $4
	JB   mx_tail
	VMOVUPD 0(SI), Y4
	VMAXPD Y0, Y4, Y0
	ADDQ $32, SI
	SUBQ $4, CX
	JMP  mx_4loop

mx_tail:
	TESTQ CX, CX
	JZ    mx_done
	TAILPTR
	VMOVDQU 0(DX), Y8
	VMASKMOVPD 0(SI), Y8, Y4
	VMAXPD Y0, Y4, Y5
	VBLENDVPD Y8, Y5, Y0, Y0

mx_done:
	MAXREDUCE
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func logKernelRowAVX2(dst, l, fct []float64, stride int, c []float64, invh float64)
//
// Blocks of 16 centres (four registers of dot products), then 4, then a
// masked tail; each dot product is summed from 0 over m = 0..d-1 in order.
TEXT ·logKernelRowAVX2(SB), NOSPLIT, $0-112
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ l_base+24(FP), SI
	MOVQ l_len+32(FP), R9
	MOVQ fct_base+48(FP), R10
	MOVQ stride+72(FP), R11
	SHLQ $3, R11
	MOVQ c_base+80(FP), BX
	VBROADCASTSD invh+104(FP), Y15

lk_16:
	CMPQ CX, $16
	JB   lk_4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ R10, R12
	MOVQ SI, R13
	MOVQ R9, R14
	TESTQ R14, R14
	JZ    lk_16e

lk_16m:
	VBROADCASTSD (R13), Y8
	VMULPD 0(R12), Y8, Y4
	VMULPD 32(R12), Y8, Y5
	VMULPD 64(R12), Y8, Y6
	VMULPD 96(R12), Y8, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $8, R13
	ADDQ R11, R12
	DECQ R14
	JNZ  lk_16m

lk_16e:
	VMULPD Y15, Y0, Y0
	VMULPD Y15, Y1, Y1
	VMULPD Y15, Y2, Y2
	VMULPD Y15, Y3, Y3
	VSUBPD 0(BX), Y0, Y0
	VSUBPD 32(BX), Y1, Y1
	VSUBPD 64(BX), Y2, Y2
	VSUBPD 96(BX), Y3, Y3
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, BX
	ADDQ $128, R10
	SUBQ $16, CX
	JMP  lk_16

lk_4:
	CMPQ CX, $4
	JB   lk_tail
	VXORPD Y0, Y0, Y0
	MOVQ R10, R12
	MOVQ SI, R13
	MOVQ R9, R14
	TESTQ R14, R14
	JZ    lk_4e

lk_4m:
	VBROADCASTSD (R13), Y8
	VMULPD 0(R12), Y8, Y4
	VADDPD Y4, Y0, Y0
	ADDQ $8, R13
	ADDQ R11, R12
	DECQ R14
	JNZ  lk_4m

lk_4e:
	VMULPD Y15, Y0, Y0
	VSUBPD 0(BX), Y0, Y0
	VMOVUPD Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $32, BX
	ADDQ $32, R10
	SUBQ $4, CX
	JMP  lk_4

lk_tail:
	TESTQ CX, CX
	JZ    lk_done
	TAILPTR
	VMOVDQU 0(DX), Y9
	VXORPD Y0, Y0, Y0
	MOVQ R10, R12
	MOVQ SI, R13
	MOVQ R9, R14
	TESTQ R14, R14
	JZ    lk_te

lk_tm:
	VBROADCASTSD (R13), Y8
	VMASKMOVPD 0(R12), Y9, Y4
	VMULPD Y4, Y8, Y4
	VADDPD Y4, Y0, Y0
	ADDQ $8, R13
	ADDQ R11, R12
	DECQ R14
	JNZ  lk_tm

lk_te:
	VMASKMOVPD 0(BX), Y9, Y5
	VMULPD Y15, Y0, Y0
	VSUBPD Y5, Y0, Y0
	VMASKMOVPD Y0, Y9, 0(DI)

lk_done:
	VZEROUPPER
	RET

// func axpyRowsAVX2(acc, w, v []float64)
//
// acc is processed 32 entries at a time (eight registers), then 16 (four),
// then the last up to 15 with masked loads and stores (one, two or four
// registers), each chunk held in registers while every row i adds w[i] *
// v[i*k + l] (rows with w[i] = 0 are skipped, in either sign).
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-72
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), R9
	MOVQ w_base+24(FP), SI
	MOVQ w_len+32(FP), R10
	MOVQ v_base+48(FP), BX
	MOVQ R9, R11
	SHLQ $3, R11
	TESTQ R10, R10
	JZ    ax_done

ax_32:
	CMPQ R9, $32
	JB   ax_16
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VMOVUPD 128(DI), Y4
	VMOVUPD 160(DI), Y5
	VMOVUPD 192(DI), Y6
	VMOVUPD 224(DI), Y7
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, R14

ax_32r:
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   ax_32s
	VBROADCASTSD (R12), Y15
	VMULPD 0(R13), Y15, Y8
	VMULPD 32(R13), Y15, Y9
	VMULPD 64(R13), Y15, Y10
	VMULPD 96(R13), Y15, Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VADDPD Y10, Y2, Y2
	VADDPD Y11, Y3, Y3
	VMULPD 128(R13), Y15, Y8
	VMULPD 160(R13), Y15, Y9
	VMULPD 192(R13), Y15, Y10
	VMULPD 224(R13), Y15, Y11
	VADDPD Y8, Y4, Y4
	VADDPD Y9, Y5, Y5
	VADDPD Y10, Y6, Y6
	VADDPD Y11, Y7, Y7

ax_32s:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_32r
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)
	VMOVUPD Y6, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, BX
	SUBQ $32, R9
	JMP  ax_32

ax_16:
	CMPQ R9, $16
	JB   ax_tail
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, R14

ax_16r:
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   ax_16s
	VBROADCASTSD (R12), Y15
	VMULPD 0(R13), Y15, Y8
	VMULPD 32(R13), Y15, Y9
	VMULPD 64(R13), Y15, Y10
	VMULPD 96(R13), Y15, Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VADDPD Y10, Y2, Y2
	VADDPD Y11, Y3, Y3

ax_16s:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_16r
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, BX
	SUBQ $16, R9

ax_tail:
	TESTQ R9, R9
	JZ    ax_done
	MOVQ R9, CX
	TAILPTR
	VMOVDQU 0(DX), Y8
	VMOVDQU 32(DX), Y9
	VMOVDQU 64(DX), Y10
	VMOVDQU 96(DX), Y11
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, R14
	CMPQ R9, $4
	JBE  ax_t1
	CMPQ R9, $8
	JBE  ax_t2
	VMASKMOVPD 0(DI), Y8, Y0
	VMASKMOVPD 32(DI), Y9, Y1
	VMASKMOVPD 64(DI), Y10, Y2
	VMASKMOVPD 96(DI), Y11, Y3

ax_t4r:
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   ax_t4s
	VBROADCASTSD (R12), Y15
	VMASKMOVPD 0(R13), Y8, Y4
	VMASKMOVPD 32(R13), Y9, Y5
	VMASKMOVPD 64(R13), Y10, Y6
	VMASKMOVPD 96(R13), Y11, Y7
	VMULPD Y4, Y15, Y4
	VMULPD Y5, Y15, Y5
	VMULPD Y6, Y15, Y6
	VMULPD Y7, Y15, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3

ax_t4s:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_t4r
	VMASKMOVPD Y0, Y8, 0(DI)
	VMASKMOVPD Y1, Y9, 32(DI)
	VMASKMOVPD Y2, Y10, 64(DI)
	VMASKMOVPD Y3, Y11, 96(DI)
	JMP  ax_done

ax_t2:
	VMASKMOVPD 0(DI), Y8, Y0
	VMASKMOVPD 32(DI), Y9, Y1

ax_t2r:
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   ax_t2s
	VBROADCASTSD (R12), Y15
	VMASKMOVPD 0(R13), Y8, Y4
	VMASKMOVPD 32(R13), Y9, Y5
	VMULPD Y4, Y15, Y4
	VMULPD Y5, Y15, Y5
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1

ax_t2s:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_t2r
	VMASKMOVPD Y0, Y8, 0(DI)
	VMASKMOVPD Y1, Y9, 32(DI)
	JMP  ax_done

ax_t1:
	VMASKMOVPD 0(DI), Y8, Y0

ax_t1r:
	MOVQ (R12), AX
	SHLQ $1, AX
	JZ   ax_t1s
	VBROADCASTSD (R12), Y15
	VMASKMOVPD 0(R13), Y8, Y4
	VMULPD Y4, Y15, Y4
	VADDPD Y4, Y0, Y0

ax_t1s:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_t1r
	VMASKMOVPD Y0, Y8, 0(DI)

ax_done:
	VZEROUPPER
	RET

// func logKernelRows4AVX2(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64)
//
// The AVX2 micro-kernel of LogKernelRows: four evaluation points by 8
// centres per block (eight accumulators), each dot product summed from 0
// in the order m = 0..d-1 with a multiply then an add (no fused
// multiply-add), as the generic code does. It does the first len(c)/8*8
// centres; the caller does the rest.
TEXT ·logKernelRows4AVX2(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ ls_base+24(FP), SI
	MOVQ d+48(FP), R9
	MOVQ fct_base+56(FP), R10
	MOVQ stride+80(FP), R11
	SHLQ $3, R11
	MOVQ c_base+88(FP), BX
	MOVQ c_len+96(FP), CX
	MOVQ CX, DX
	SHLQ $3, DX              // dst row stride in bytes
	SHLQ $3, R9              // ls row stride in bytes

lr2_block:
	CMPQ CX, $8
	JB   lr2_done
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ R10, R12            // fct at coordinate m, this block
	MOVQ SI, R13             // rows 0 and 1 at coordinate m
	LEAQ (SI)(R9*2), AX      // rows 2 and 3 at coordinate m
	MOVQ d+48(FP), R14

lr2_m:
	VMOVUPD (R12), Y8
	VMOVUPD 32(R12), Y9
	VBROADCASTSD (R13), Y10
	VBROADCASTSD (R13)(R9*1), Y11
	VBROADCASTSD (AX), Y12
	VBROADCASTSD (AX)(R9*1), Y13
	VMULPD Y8, Y10, Y14
	VMULPD Y9, Y10, Y15
	VADDPD Y14, Y0, Y0
	VADDPD Y15, Y1, Y1
	VMULPD Y8, Y11, Y14
	VMULPD Y9, Y11, Y15
	VADDPD Y14, Y2, Y2
	VADDPD Y15, Y3, Y3
	VMULPD Y8, Y12, Y14
	VMULPD Y9, Y12, Y15
	VADDPD Y14, Y4, Y4
	VADDPD Y15, Y5, Y5
	VMULPD Y8, Y13, Y14
	VMULPD Y9, Y13, Y15
	VADDPD Y14, Y6, Y6
	VADDPD Y15, Y7, Y7
	ADDQ R11, R12
	ADDQ $8, R13
	ADDQ $8, AX
	DECQ R14
	JNZ  lr2_m

	VBROADCASTSD invh+112(FP), Y10
	VMOVUPD (BX), Y8
	VMOVUPD 32(BX), Y9
	VMULPD Y10, Y0, Y0
	VMULPD Y10, Y1, Y1
	VMULPD Y10, Y2, Y2
	VMULPD Y10, Y3, Y3
	VMULPD Y10, Y4, Y4
	VMULPD Y10, Y5, Y5
	VMULPD Y10, Y6, Y6
	VMULPD Y10, Y7, Y7
	VSUBPD Y8, Y0, Y0
	VSUBPD Y9, Y1, Y1
	VSUBPD Y8, Y2, Y2
	VSUBPD Y9, Y3, Y3
	VSUBPD Y8, Y4, Y4
	VSUBPD Y9, Y5, Y5
	VSUBPD Y8, Y6, Y6
	VSUBPD Y9, Y7, Y7
	MOVQ DI, R12
	VMOVUPD Y0, (R12)
	VMOVUPD Y1, 32(R12)
	ADDQ DX, R12
	VMOVUPD Y2, (R12)
	VMOVUPD Y3, 32(R12)
	ADDQ DX, R12
	VMOVUPD Y4, (R12)
	VMOVUPD Y5, 32(R12)
	ADDQ DX, R12
	VMOVUPD Y6, (R12)
	VMOVUPD Y7, 32(R12)
	ADDQ $64, DI
	ADDQ $64, R10
	ADDQ $64, BX
	SUBQ $8, CX
	JMP  lr2_block

lr2_done:
	VZEROUPPER
	RET

// func axpyRows4AVX2(accs, ws *[4]*float64, v *float64, kp, n int)
//
// For g = 0..3 and i = 0..n-1 in order: accs[g][l] += ws[g][i] * v[i*kp + l]
// for l < kp (kp a multiple of 4), a product then a sum as axpyRowsAVX2 (rows
// with w = 0 add +-0, which leaves an accumulator that is never -0
// unchanged; a row with all four weights 0 is skipped). Columns go 8 at a
// time (two registers per accumulator: eight accumulators, the row's two
// registers loaded once for the four weights), then 4.
TEXT ·axpyRows4AVX2(SB), NOSPLIT, $0-40
	MOVQ accs+0(FP), R8
	MOVQ ws+8(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	MOVQ v+16(FP), BX
	MOVQ kp+24(FP), CX
	MOVQ n+32(FP), DX
	MOVQ CX, R14
	SHLQ $3, R14
	XORQ R9, R9
	TESTQ DX, DX
	JZ    a4_done

a4_8:
	CMPQ CX, $8
	JB   a4_4
	MOVQ 0(R8), R11
	VMOVUPD 0(R11)(R9*1), Y0
	VMOVUPD 32(R11)(R9*1), Y1
	MOVQ 8(R8), R11
	VMOVUPD 0(R11)(R9*1), Y2
	VMOVUPD 32(R11)(R9*1), Y3
	MOVQ 16(R8), R11
	VMOVUPD 0(R11)(R9*1), Y4
	VMOVUPD 32(R11)(R9*1), Y5
	MOVQ 24(R8), R11
	VMOVUPD 0(R11)(R9*1), Y6
	VMOVUPD 32(R11)(R9*1), Y7
	MOVQ BX, R10
	XORQ AX, AX

a4_8r:
	MOVQ (SI)(AX*8), R11
	ORQ  (DI)(AX*8), R11
	ORQ  (R12)(AX*8), R11
	ORQ  (R13)(AX*8), R11
	SHLQ $1, R11
	JZ   a4_8s
	VMOVUPD 0(R10), Y8
	VMOVUPD 32(R10), Y9
	VBROADCASTSD (SI)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y0, Y0
	VMULPD Y9, Y10, Y11
	VADDPD Y11, Y1, Y1
	VBROADCASTSD (DI)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y2, Y2
	VMULPD Y9, Y10, Y11
	VADDPD Y11, Y3, Y3
	VBROADCASTSD (R12)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y4, Y4
	VMULPD Y9, Y10, Y11
	VADDPD Y11, Y5, Y5
	VBROADCASTSD (R13)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y6, Y6
	VMULPD Y9, Y10, Y11
	VADDPD Y11, Y7, Y7

a4_8s:
	ADDQ R14, R10
	INCQ AX
	CMPQ AX, DX
	JB   a4_8r
	MOVQ 0(R8), R11
	VMOVUPD Y0, 0(R11)(R9*1)
	VMOVUPD Y1, 32(R11)(R9*1)
	MOVQ 8(R8), R11
	VMOVUPD Y2, 0(R11)(R9*1)
	VMOVUPD Y3, 32(R11)(R9*1)
	MOVQ 16(R8), R11
	VMOVUPD Y4, 0(R11)(R9*1)
	VMOVUPD Y5, 32(R11)(R9*1)
	MOVQ 24(R8), R11
	VMOVUPD Y6, 0(R11)(R9*1)
	VMOVUPD Y7, 32(R11)(R9*1)
	ADDQ $64, R9
	ADDQ $64, BX
	SUBQ $8, CX
	JMP  a4_8

a4_4:
	CMPQ CX, $4
	JB   a4_done
	MOVQ 0(R8), R11
	VMOVUPD 0(R11)(R9*1), Y0
	MOVQ 8(R8), R11
	VMOVUPD 0(R11)(R9*1), Y2
	MOVQ 16(R8), R11
	VMOVUPD 0(R11)(R9*1), Y4
	MOVQ 24(R8), R11
	VMOVUPD 0(R11)(R9*1), Y6
	MOVQ BX, R10
	XORQ AX, AX

a4_4r:
	MOVQ (SI)(AX*8), R11
	ORQ  (DI)(AX*8), R11
	ORQ  (R12)(AX*8), R11
	ORQ  (R13)(AX*8), R11
	SHLQ $1, R11
	JZ   a4_4s
	VMOVUPD 0(R10), Y8
	VBROADCASTSD (SI)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y0, Y0
	VBROADCASTSD (DI)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y2, Y2
	VBROADCASTSD (R12)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y4, Y4
	VBROADCASTSD (R13)(AX*8), Y10
	VMULPD Y8, Y10, Y11
	VADDPD Y11, Y6, Y6

a4_4s:
	ADDQ R14, R10
	INCQ AX
	CMPQ AX, DX
	JB   a4_4r
	MOVQ 0(R8), R11
	VMOVUPD Y0, 0(R11)(R9*1)
	MOVQ 8(R8), R11
	VMOVUPD Y2, 0(R11)(R9*1)
	MOVQ 16(R8), R11
	VMOVUPD Y4, 0(R11)(R9*1)
	MOVQ 24(R8), R11
	VMOVUPD Y6, 0(R11)(R9*1)
	ADDQ $32, R9
	ADDQ $32, BX
	SUBQ $4, CX
	JMP  a4_4

a4_done:
	VZEROUPPER
	RET
