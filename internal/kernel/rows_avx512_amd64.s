// The AVX-512 micro-kernel of LogKernelRows: four evaluation points by 16
// centres per block (eight accumulators), each dot product summed from 0 in
// the order m = 0..d-1 with a multiply then an add (no fused multiply-add),
// as the generic code does.

#include "textflag.h"

// func logKernelRows4AVX512(dst, ls []float64, d int, fct []float64, stride int, c []float64, invh float64)
TEXT ·logKernelRows4AVX512(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ ls_base+24(FP), SI
	MOVQ d+48(FP), R9
	MOVQ fct_base+56(FP), R10
	MOVQ stride+80(FP), R11
	SHLQ $3, R11
	MOVQ c_base+88(FP), BX
	MOVQ c_len+96(FP), CX
	VBROADCASTSD invh+112(FP), Z22
	MOVQ CX, DX
	SHLQ $3, DX              // dst row stride in bytes
	SHLQ $3, R9              // ls row stride in bytes

lr_block:
	TESTQ CX, CX
	JZ    lr_done
	// Masks for min(CX, 16) centres: K1 (first 8), K2 (next 8).
	MOVQ CX, R8
	CMPQ R8, $16
	JBE  lr_mask
	MOVQ $16, R8

lr_mask:
	MOVQ $0xffff, AX
	CMPQ CX, $16
	JAE  lr_kmask
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX

lr_kmask:
	KMOVW AX, K1
	KSHIFTRW $8, K1, K2
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	VXORPD Z2, Z2, Z2
	VXORPD Z3, Z3, Z3
	VXORPD Z4, Z4, Z4
	VXORPD Z5, Z5, Z5
	VXORPD Z6, Z6, Z6
	VXORPD Z7, Z7, Z7
	MOVQ R10, R12            // fct at coordinate m, this block
	MOVQ SI, R13             // rows 0 and 1 at coordinate m
	LEAQ (SI)(R9*2), AX      // rows 2 and 3 at coordinate m
	MOVQ d+48(FP), R14

lr_m:
	VMOVUPD.Z (R12), K1, Z12
	VMOVUPD.Z 64(R12), K2, Z13
	VBROADCASTSD (R13), Z8
	VBROADCASTSD (R13)(R9*1), Z9
	VBROADCASTSD (AX), Z10
	VBROADCASTSD (AX)(R9*1), Z11
	VMULPD Z12, Z8, Z14
	VMULPD Z13, Z8, Z15
	VMULPD Z12, Z9, Z16
	VMULPD Z13, Z9, Z17
	VADDPD Z14, Z0, Z0
	VADDPD Z15, Z1, Z1
	VADDPD Z16, Z2, Z2
	VADDPD Z17, Z3, Z3
	VMULPD Z12, Z10, Z18
	VMULPD Z13, Z10, Z19
	VMULPD Z12, Z11, Z20
	VMULPD Z13, Z11, Z21
	VADDPD Z18, Z4, Z4
	VADDPD Z19, Z5, Z5
	VADDPD Z20, Z6, Z6
	VADDPD Z21, Z7, Z7
	ADDQ R11, R12
	ADDQ $8, R13
	ADDQ $8, AX
	DECQ R14
	JNZ  lr_m

	VMOVUPD.Z (BX), K1, Z23
	VMOVUPD.Z 64(BX), K2, Z24
	VMULPD Z22, Z0, Z0
	VMULPD Z22, Z1, Z1
	VMULPD Z22, Z2, Z2
	VMULPD Z22, Z3, Z3
	VMULPD Z22, Z4, Z4
	VMULPD Z22, Z5, Z5
	VMULPD Z22, Z6, Z6
	VMULPD Z22, Z7, Z7
	VSUBPD Z23, Z0, Z0
	VSUBPD Z24, Z1, Z1
	VSUBPD Z23, Z2, Z2
	VSUBPD Z24, Z3, Z3
	VSUBPD Z23, Z4, Z4
	VSUBPD Z24, Z5, Z5
	VSUBPD Z23, Z6, Z6
	VSUBPD Z24, Z7, Z7
	MOVQ DI, R12
	VMOVUPD Z0, K1, (R12)
	VMOVUPD Z1, K2, 64(R12)
	ADDQ DX, R12
	VMOVUPD Z2, K1, (R12)
	VMOVUPD Z3, K2, 64(R12)
	ADDQ DX, R12
	VMOVUPD Z4, K1, (R12)
	VMOVUPD Z5, K2, 64(R12)
	ADDQ DX, R12
	VMOVUPD Z6, K1, (R12)
	VMOVUPD Z7, K2, 64(R12)
	ADDQ $128, DI
	ADDQ $128, R10
	ADDQ $128, BX
	SUBQ R8, CX
	JMP  lr_block

lr_done:
	VZEROUPPER
	RET
