#!/bin/bash
# Demos of the 10 FALSE PASSes (plus absmax_quantize_element_reciprocal, caught, for comparison): run from the repository root.
R=tools/redteam_round16
RO=tools/redteam_round11/values/run_on.py
PY=.venv/bin/python
echo "== cross_attention_bf16_tail_mask_minus_1e4"
$PY $RO $R/cross_attention_bf16_tail_mask_minus_1e4.json "{'q': torch.full((1,1,1,64), 8.0, dtype=torch.bfloat16), 'k': torch.full((1,1,1,64), -32.0, dtype=torch.bfloat16), 'v': torch.ones(1,1,1,64, dtype=torch.bfloat16)}"
echo "== gemm_bias_relu_f16_acc_rounded_before_bias"
$PY $RO $R/gemm_bias_relu_f16_acc_rounded_before_bias.json "{'x': torch.tensor([[1000.0, 0.3]], dtype=torch.float16), 'w': torch.tensor([[1.0], [1.0]], dtype=torch.float16), 'bias': torch.tensor([-1000.0], dtype=torch.float16)}"
echo "== linear_bias_bf16_acc_rounded_before_bias"
$PY $RO $R/linear_bias_bf16_acc_rounded_before_bias.json "{'x': torch.tensor([[256.0, 1.0]], dtype=torch.bfloat16), 'weight': torch.tensor([[1.0, 1.0]], dtype=torch.bfloat16), 'bias': torch.tensor([-256.0], dtype=torch.bfloat16)}"
echo "== swiglu_mlp_f16_gate_up_rounded_f16"
$PY $RO $R/swiglu_mlp_f16_gate_up_rounded_f16.json "{'x': torch.tensor([[256.0, 256.0]], dtype=torch.float16), 'w1': torch.tensor([[256.0], [256.0]], dtype=torch.float16), 'w3': torch.tensor([[2.0**-10], [0.0]], dtype=torch.float16)}"
echo "== rope_bf16_tables_in_bf16"
$PY $RO $R/rope_bf16_tables_in_bf16.json "{'x': torch.full((1,1,1,64), 1024.0, dtype=torch.bfloat16), 'cos': torch.full((1,32), 0.7075), 'sin': torch.full((1,32), 0.7065)}"
echo "== row_scale_float_division_row (M=2051, N=8190; prints the one row pair)"
$PY $RO $R/row_scale_float_division_row.json "{'x': torch.ones(2051, 8190), 's': (torch.arange(2051) % 2).float()}" 2>&1 | grep -v "^reference\|^kernel" 
echo "== fp8_gemm_blockwise_bf16_scale_product_f16"
$PY $RO $R/fp8_gemm_blockwise_bf16_scale_product_f16.json "{'a': torch.full((1,2,128), 448.0).to(torch.float8_e4m3fn), 'a_scale': torch.tensor([[0.1, 0.1]]), 'w': torch.cat([torch.full((1,128,1,128), 448.0), torch.full((1,128,1,128), -448.0)], dim=2).to(torch.float8_e4m3fn), 'w_scale': torch.tensor([[0.3, 0.30001]])}" 2>&1 | cut -c1-400
echo "== absmax_quantize_scale_reciprocal"
$PY $RO $R/absmax_quantize_scale_reciprocal.json "{'x': torch.tensor([[72.0, 36.0, 5.0]])}"
echo "== absmax_quantize_element_reciprocal"
$PY $RO $R/absmax_quantize_element_reciprocal.json "{'x': torch.tensor([[18.0, 9.0]])}"
echo "== cross_attention_bf16_running_max_init_minus_1e4"
$PY $RO $R/cross_attention_bf16_running_max_init_minus_1e4.json "{'q': torch.full((1,1,1,64), 16.0, dtype=torch.bfloat16), 'k': torch.full((1,1,1,64), -64.0, dtype=torch.bfloat16), 'v': torch.ones(1,1,1,64, dtype=torch.bfloat16)}" 2>&1 | cut -c1-400
echo "== glu_halves_sigmoid_tanh_form"
$PY $RO $R/glu_halves_sigmoid_tanh_form.json "{'x': torch.tensor([[[10000.0, 1.0], [-20.0, 0.0]]])}"
