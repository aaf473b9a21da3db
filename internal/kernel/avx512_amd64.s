// AVX-512 (F and DQ) versions of the generic loops in generic.go. Each
// performs the generic code's float64 operations in the same order (fused
// multiply-adds exactly where expInto has math.FMA, none elsewhere) and
// keeps sums in the same eight lanes (element i in lane i mod 8, one ZMM
// register), so the results are bit-identical.

#include "textflag.h"

// LOADEXP loads the exponential's constants (expConst) and its table:
// Z17 invLn2N, Z18 roundMagic, Z19 ln2NHi, Z20 ln2NLo, Z21 1/8!, Z22 1/7!,
// Z23 1/6!, Z24 1/5!, Z30 1/4!, Z31 1/3!, Z8 1/2, Z9 1, Z25 ExpMin, Z27
// exp2Table (all eight entries: looked up by VPERMPD).
#define LOADEXP \
	LEAQ ·expConst(SB), AX \
	VBROADCASTSD 0(AX), Z17 \
	VBROADCASTSD 8(AX), Z18 \
	VBROADCASTSD 16(AX), Z19 \
	VBROADCASTSD 24(AX), Z20 \
	VBROADCASTSD 32(AX), Z21 \
	VBROADCASTSD 40(AX), Z22 \
	VBROADCASTSD 48(AX), Z23 \
	VBROADCASTSD 56(AX), Z24 \
	VBROADCASTSD 64(AX), Z30 \
	VBROADCASTSD 72(AX), Z31 \
	VBROADCASTSD 80(AX), Z8 \
	VBROADCASTSD 88(AX), Z9 \
	VBROADCASTSD 96(AX), Z25 \
	VMOVUPD ·exp2Table(SB), Z27

// EXP8 replaces V by e^V (expInto's operations, lane by lane), 0 where V <
// ExpMin or NaN. T, KF, R, Q are scratch registers, KK a scratch mask.
// The table index is the low 3 bits of t's bits, which VPERMPD reads.
#define EXP8(V, T, KF, R, Q, KK) \
	VCMPPD $0x1d, Z25, V, KK \
	VMOVAPD V, T \
	VFMADD213PD Z18, Z17, T \
	VSUBPD Z18, T, KF \
	VMOVAPD V, R \
	VFNMADD231PD Z19, KF, R \
	VFNMADD231PD Z20, KF, R \
	VMOVAPD Z22, Q \
	VFMADD231PD Z21, R, Q \
	VFMADD213PD Z23, R, Q \
	VFMADD213PD Z24, R, Q \
	VFMADD213PD Z30, R, Q \
	VFMADD213PD Z31, R, Q \
	VFMADD213PD Z8, R, Q \
	VFMADD213PD Z9, R, Q \
	VMULPD R, Q, Q \
	VPERMPD Z27, T, KF \
	VFMADD213PD KF, KF, Q \
	VPSRLQ $3, T, T \
	VPSLLQ $52, T, T \
	VPADDQ.Z T, Q, KK, V

// REDUCE leaves in X0 the sum of Z0's lanes in reduceLanes' order
// (clobbers Z1).
#define REDUCE \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPD Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPD X1, X0, X0 \
	VPERMILPD $1, X0, X1 \
	VADDSD X1, X0, X0

// TAILMASKS sets K6 to the first min(CX, 8) lanes and K7 to the next
// max(CX-8, 0) (CX < 16; clobbers DX).
#define TAILMASKS \
	MOVQ $1, DX \
	SHLQ CX, DX \
	DECQ DX \
	KMOVW DX, K6 \
	KSHIFTRW $8, K6, K7

// func sumExpAVX512(x []float64, shift, cut float64) float64
TEXT ·sumExpAVX512(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD shift+24(FP), Z16
	VBROADCASTSD cut+32(FP), Z26
	LOADEXP
	VXORPD Z0, Z0, Z0

se_group:
	CMPQ CX, $16
	JB   se_tail
	VMOVUPD (SI), Z28
	VMOVUPD 64(SI), Z29
	VCMPPD $5, Z26, Z28, K4
	VCMPPD $5, Z26, Z29, K5
	KORTESTW K4, K5
	JZ   se_next
	VSUBPD Z16, Z28, Z1
	VSUBPD Z16, Z29, Z11
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	EXP8(Z11, Z12, Z13, Z14, Z15, K3)
	VADDPD Z1, Z0, Z0
	VADDPD Z11, Z0, Z0

se_next:
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  se_group

se_tail:
	TESTQ CX, CX
	JZ    se_done
	TAILMASKS
	VMOVUPD.Z (SI), K6, Z28
	VMOVUPD.Z 64(SI), K7, Z29
	VCMPPD $5, Z26, Z28, K6, K4
	VCMPPD $5, Z26, Z29, K7, K5
	KORTESTW K4, K5
	JZ   se_done
	VSUBPD Z16, Z28, Z1
	VSUBPD Z16, Z29, Z11
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	EXP8(Z11, Z12, Z13, Z14, Z15, K3)
	VMOVAPD.Z Z1, K6, Z1
	VMOVAPD.Z Z11, K7, Z11
	VADDPD Z1, Z0, Z0
	VADDPD Z11, Z0, Z0

se_done:
	REDUCE
	VMOVSD X0, ret+40(FP)
	VZEROUPPER
	RET

// func sumExpSqAVX512(x []float64, shift, cut float64) (float64, float64)
TEXT ·sumExpSqAVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD shift+24(FP), Z16
	VBROADCASTSD cut+32(FP), Z26
	LOADEXP
	VXORPD Z0, Z0, Z0
	VXORPD Z7, Z7, Z7

sq_group:
	CMPQ CX, $16
	JB   sq_tail
	VMOVUPD (SI), Z28
	VMOVUPD 64(SI), Z29
	VCMPPD $5, Z26, Z28, K4
	VCMPPD $5, Z26, Z29, K5
	KORTESTW K4, K5
	JZ   sq_next
	VSUBPD Z16, Z28, Z1
	VSUBPD Z16, Z29, Z11
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	EXP8(Z11, Z12, Z13, Z14, Z15, K3)
	VADDPD Z1, Z0, Z0
	VMULPD Z1, Z1, Z6
	VADDPD Z6, Z7, Z7
	VADDPD Z11, Z0, Z0
	VMULPD Z11, Z11, Z10
	VADDPD Z10, Z7, Z7

sq_next:
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  sq_group

sq_tail:
	TESTQ CX, CX
	JZ    sq_done
	TAILMASKS
	VMOVUPD.Z (SI), K6, Z28
	VMOVUPD.Z 64(SI), K7, Z29
	VCMPPD $5, Z26, Z28, K6, K4
	VCMPPD $5, Z26, Z29, K7, K5
	KORTESTW K4, K5
	JZ   sq_done
	VSUBPD Z16, Z28, Z1
	VSUBPD Z16, Z29, Z11
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	EXP8(Z11, Z12, Z13, Z14, Z15, K3)
	VMOVAPD.Z Z1, K6, Z1
	VMOVAPD.Z Z11, K7, Z11
	VADDPD Z1, Z0, Z0
	VMULPD Z1, Z1, Z6
	VADDPD Z6, Z7, Z7
	VADDPD Z11, Z0, Z0
	VMULPD Z11, Z11, Z10
	VADDPD Z10, Z7, Z7

sq_done:
	REDUCE
	VMOVSD X0, s+40(FP)
	VMOVAPD Z7, Z0
	REDUCE
	VMOVSD X0, sq+48(FP)
	VZEROUPPER
	RET

// func expTermsAVX512(dst, x []float64, shift, cut float64, lanes *[8]float64)
TEXT ·expTermsAVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	VBROADCASTSD shift+48(FP), Z16
	VBROADCASTSD cut+56(FP), Z26
	MOVQ lanes+64(FP), R9
	LOADEXP
	VMOVUPD (R9), Z0

et_loop:
	CMPQ CX, $8
	JB   et_tail
	VMOVUPD (SI), Z28
	VCMPPD $0x1d, Z26, Z28, K4
	KORTESTB K4, K4
	JNZ  et_some
	// Eight terms all below the cut (or NaN): zeros, without their
	// exponentials (adding them to the lanes would change nothing).
	VPXORQ  Z1, Z1, Z1
	VMOVUPD Z1, (DI)
	JMP     et_next

et_some:
	VSUBPD Z16, Z28, Z1
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	VMOVAPD.Z Z1, K4, Z1
	VMOVUPD Z1, (DI)
	VADDPD Z1, Z0, Z0

et_next:
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  et_loop

et_tail:
	TESTQ CX, CX
	JZ    et_done
	TAILMASKS
	VMOVUPD.Z (SI), K6, Z28
	VCMPPD $0x1d, Z26, Z28, K6, K4
	VSUBPD Z16, Z28, Z1
	EXP8(Z1, Z2, Z3, Z4, Z5, K1)
	VMOVAPD.Z Z1, K4, Z1
	VMOVUPD Z1, K6, (DI)
	VADDPD Z1, Z0, Z0

et_done:
	VMOVUPD Z0, (R9)
	VZEROUPPER
	RET

// func affineMaxAVX512(dst, x, c []float64, scale float64) float64
TEXT ·affineMaxAVX512(SB), NOSPLIT, $0-88
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ c_base+48(FP), R9
	VBROADCASTSD scale+72(FP), Z16
	MOVQ $0xfff0000000000000, AX
	VPBROADCASTQ AX, Z0

am_loop:
	CMPQ CX, $8
	JB   am_tail
	VMULPD (SI), Z16, Z1
	VSUBPD (R9), Z1, Z1
	VMOVUPD Z1, (DI)
	VMAXPD Z1, Z0, Z0
	ADDQ $64, SI
	ADDQ $64, R9
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  am_loop

am_tail:
	TESTQ CX, CX
	JZ    am_done
	TAILMASKS
	VMOVUPD.Z (SI), K6, Z1
	VMOVUPD.Z (R9), K6, Z2
	VMULPD Z16, Z1, Z1
	VSUBPD Z2, Z1, Z1
	VMOVUPD Z1, K6, (DI)
	VMAXPD Z1, Z0, K6, Z0

am_done:
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXSD X1, X0, X0
	VMOVSD X0, ret+80(FP)
	VZEROUPPER
	RET

// func maxAVX512(x []float64) float64
TEXT ·maxAVX512(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ $0xfff0000000000000, AX
	VPBROADCASTQ AX, Z0
	VMOVAPD Z0, Z1

mx_loop:
	CMPQ CX, $16
	JB   mx_8
	VMAXPD (SI), Z0, Z0
	VMAXPD 64(SI), Z1, Z1
	ADDQ $128, SI
	SUBQ $16, CX
	JMP  mx_loop

mx_8:
	VMAXPD Z1, Z0, Z0
	CMPQ CX, $8
	JB   mx_tail
	VMAXPD (SI), Z0, Z0
	ADDQ $64, SI
	SUBQ $8, CX

mx_tail:
	TESTQ CX, CX
	JZ    mx_done
	TAILMASKS
	VMOVUPD.Z (SI), K6, Z2
	VMAXPD Z2, Z0, K6, Z0

mx_done:
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXSD X1, X0, X0
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func logKernelRowAVX512(dst, l, fct []float64, stride int, c []float64, invh float64)
//
// Blocks of 64 centres (eight registers of dot products: eight independent
// addition chains hide the adds' latency), then blocks of at most 32 with
// masks (four chains); each dot product is summed from 0 over m = 0..d-1
// in order, as the generic code does.
TEXT ·logKernelRowAVX512(SB), NOSPLIT, $0-112
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ l_base+24(FP), SI
	MOVQ l_len+32(FP), R9
	MOVQ fct_base+48(FP), R10
	MOVQ stride+72(FP), R11
	SHLQ $3, R11
	MOVQ c_base+80(FP), BX
	VBROADCASTSD invh+104(FP), Z16

lk_64:
	CMPQ CX, $64
	JB   lk_32
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	VXORPD Z2, Z2, Z2
	VXORPD Z3, Z3, Z3
	VXORPD Z4, Z4, Z4
	VXORPD Z5, Z5, Z5
	VXORPD Z6, Z6, Z6
	VXORPD Z7, Z7, Z7
	MOVQ R10, R12
	MOVQ SI, R13
	MOVQ R9, R14

lk_64m:
	VBROADCASTSD (R13), Z8
	VMULPD (R12), Z8, Z10
	VMULPD 64(R12), Z8, Z11
	VMULPD 128(R12), Z8, Z12
	VMULPD 192(R12), Z8, Z13
	VADDPD Z10, Z0, Z0
	VADDPD Z11, Z1, Z1
	VADDPD Z12, Z2, Z2
	VADDPD Z13, Z3, Z3
	VMULPD 256(R12), Z8, Z10
	VMULPD 320(R12), Z8, Z11
	VMULPD 384(R12), Z8, Z12
	VMULPD 448(R12), Z8, Z13
	VADDPD Z10, Z4, Z4
	VADDPD Z11, Z5, Z5
	VADDPD Z12, Z6, Z6
	VADDPD Z13, Z7, Z7
	ADDQ $8, R13
	ADDQ R11, R12
	DECQ R14
	JNZ  lk_64m
	VMULPD Z16, Z0, Z0
	VMULPD Z16, Z1, Z1
	VMULPD Z16, Z2, Z2
	VMULPD Z16, Z3, Z3
	VMULPD Z16, Z4, Z4
	VMULPD Z16, Z5, Z5
	VMULPD Z16, Z6, Z6
	VMULPD Z16, Z7, Z7
	VSUBPD (BX), Z0, Z0
	VSUBPD 64(BX), Z1, Z1
	VSUBPD 128(BX), Z2, Z2
	VSUBPD 192(BX), Z3, Z3
	VSUBPD 256(BX), Z4, Z4
	VSUBPD 320(BX), Z5, Z5
	VSUBPD 384(BX), Z6, Z6
	VSUBPD 448(BX), Z7, Z7
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VMOVUPD Z4, 256(DI)
	VMOVUPD Z5, 320(DI)
	VMOVUPD Z6, 384(DI)
	VMOVUPD Z7, 448(DI)
	ADDQ $512, DI
	ADDQ $512, BX
	ADDQ $512, R10
	SUBQ $64, CX
	JMP  lk_64

lk_32:
	TESTQ CX, CX
	JZ    lk_done
	// min(CX, 32) centres in four masked registers.
	MOVQ CX, R8
	CMPQ R8, $32
	JBE  lk_mask
	MOVQ $32, R8

lk_mask:
	MOVQ $1, DX
	MOVQ CX, AX
	MOVQ R8, CX
	SHLQ CX, DX
	MOVQ AX, CX
	DECQ DX
	KMOVW DX, K1
	KSHIFTRW $8, K1, K2
	SHRQ $16, DX
	KMOVW DX, K3
	KSHIFTRW $8, K3, K4
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	VXORPD Z2, Z2, Z2
	VXORPD Z3, Z3, Z3
	MOVQ R10, R12
	MOVQ SI, R13
	MOVQ R9, R14

lk_32m:
	VBROADCASTSD (R13), Z8
	VMULPD.Z (R12), Z8, K1, Z10
	VMULPD.Z 64(R12), Z8, K2, Z11
	VMULPD.Z 128(R12), Z8, K3, Z12
	VMULPD.Z 192(R12), Z8, K4, Z13
	VADDPD Z10, Z0, Z0
	VADDPD Z11, Z1, Z1
	VADDPD Z12, Z2, Z2
	VADDPD Z13, Z3, Z3
	ADDQ $8, R13
	ADDQ R11, R12
	DECQ R14
	JNZ  lk_32m
	VMULPD Z16, Z0, Z0
	VMULPD Z16, Z1, Z1
	VMULPD Z16, Z2, Z2
	VMULPD Z16, Z3, Z3
	VSUBPD.Z (BX), Z0, K1, Z0
	VSUBPD.Z 64(BX), Z1, K2, Z1
	VSUBPD.Z 128(BX), Z2, K3, Z2
	VSUBPD.Z 192(BX), Z3, K4, Z3
	VMOVUPD Z0, K1, (DI)
	VMOVUPD Z1, K2, 64(DI)
	VMOVUPD Z2, K3, 128(DI)
	VMOVUPD Z3, K4, 192(DI)
	ADDQ $256, DI
	ADDQ $256, BX
	ADDQ $256, R10
	SUBQ R8, CX
	JMP  lk_32

lk_done:
	VZEROUPPER
	RET

// func axpyRowsAVX512(acc, w, v []float64)
//
// acc is processed 32 entries at a time, held in four registers while
// every row i adds w[i] * v[i*k + l] (rows with w[i] = 0 are skipped).
TEXT ·axpyRowsAVX512(SB), NOSPLIT, $0-72
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), R9
	MOVQ w_base+24(FP), SI
	MOVQ w_len+32(FP), R10
	MOVQ v_base+48(FP), BX
	MOVQ R9, R11
	SHLQ $3, R11
	TESTQ R10, R10
	JZ    ax_done

ax_chunk:
	TESTQ R9, R9
	JZ    ax_done
	CMPQ R9, $32
	JA   ax_c64
	// Masks for the last R9 <= 32 entries: K1..K4, eight lanes each.
	MOVQ R9, CX

ax_m:
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K1
	KSHIFTRW $8, K1, K2
	SHRQ $16, DX
	KMOVW DX, K3
	KSHIFTRW $8, K3, K4
	VMOVUPD.Z (DI), K1, Z0
	VMOVUPD.Z 64(DI), K2, Z1
	VMOVUPD.Z 128(DI), K3, Z2
	VMOVUPD.Z 192(DI), K4, Z3
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, R14
	CMPQ CX, $16
	JA   ax_row4

ax_row2:
	MOVQ (R12), AX
	MOVQ AX, DX
	SHLQ $1, DX
	JZ   ax_skip2
	VPBROADCASTQ AX, Z8
	VMULPD.Z (R13), Z8, K1, Z4
	VMULPD.Z 64(R13), Z8, K2, Z5
	VADDPD Z4, Z0, Z0
	VADDPD Z5, Z1, Z1

ax_skip2:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_row2
	JMP  ax_store

ax_row4:
	MOVQ (R12), AX
	MOVQ AX, DX
	SHLQ $1, DX
	JZ   ax_skip4
	VPBROADCASTQ AX, Z8
	VMULPD.Z (R13), Z8, K1, Z4
	VMULPD.Z 64(R13), Z8, K2, Z5
	VMULPD.Z 128(R13), Z8, K3, Z6
	VMULPD.Z 192(R13), Z8, K4, Z7
	VADDPD Z4, Z0, Z0
	VADDPD Z5, Z1, Z1
	VADDPD Z6, Z2, Z2
	VADDPD Z7, Z3, Z3

ax_skip4:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_row4

ax_store:
	VMOVUPD Z0, K1, (DI)
	VMOVUPD Z1, K2, 64(DI)
	VMOVUPD Z2, K3, 128(DI)
	VMOVUPD Z3, K4, 192(DI)
	ADDQ $256, DI
	ADDQ $256, BX
	SUBQ CX, R9
	JMP  ax_chunk

// Chunks of 33 to 64 entries: eight accumulators (eight independent add
// chains, enough to keep the adds' pipes busy), the first four full, the
// last four masked by K1..K4.
ax_c64:
	MOVQ R9, CX
	CMPQ CX, $64
	JBE  ax_m64
	MOVQ $64, CX

ax_m64:
	MOVQ CX, AX
	SUBQ $32, CX
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	MOVQ AX, CX
	KMOVW DX, K1
	KSHIFTRW $8, K1, K2
	SHRQ $16, DX
	KMOVW DX, K3
	KSHIFTRW $8, K3, K4
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPD 128(DI), Z2
	VMOVUPD 192(DI), Z3
	VMOVUPD.Z 256(DI), K1, Z4
	VMOVUPD.Z 320(DI), K2, Z5
	VMOVUPD.Z 384(DI), K3, Z6
	VMOVUPD.Z 448(DI), K4, Z7
	MOVQ SI, R12
	MOVQ BX, R13
	MOVQ R10, R14

ax_row8:
	MOVQ (R12), AX
	MOVQ AX, DX
	SHLQ $1, DX
	JZ   ax_skip8
	VPBROADCASTQ AX, Z8
	VMULPD (R13), Z8, Z10
	VMULPD 64(R13), Z8, Z11
	VMULPD 128(R13), Z8, Z12
	VMULPD 192(R13), Z8, Z13
	VMULPD.Z 256(R13), Z8, K1, Z14
	VMULPD.Z 320(R13), Z8, K2, Z15
	VMULPD.Z 384(R13), Z8, K3, Z16
	VMULPD.Z 448(R13), Z8, K4, Z17
	VADDPD Z10, Z0, Z0
	VADDPD Z11, Z1, Z1
	VADDPD Z12, Z2, Z2
	VADDPD Z13, Z3, Z3
	VADDPD Z14, Z4, Z4
	VADDPD Z15, Z5, Z5
	VADDPD Z16, Z6, Z6
	VADDPD Z17, Z7, Z7

ax_skip8:
	ADDQ $8, R12
	ADDQ R11, R13
	DECQ R14
	JNZ  ax_row8
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VMOVUPD Z4, K1, 256(DI)
	VMOVUPD Z5, K2, 320(DI)
	VMOVUPD Z6, K3, 384(DI)
	VMOVUPD Z7, K4, 448(DI)
	ADDQ $512, DI
	ADDQ $512, BX
	SUBQ CX, R9
	JMP  ax_chunk

ax_done:
	VZEROUPPER
	RET
