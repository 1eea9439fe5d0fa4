# Show that each FALSE PASS of round 18 is wrong (run from the repository root; output: demos.txt).
# run_on: hand-made inputs where the kernel is many steps (or inf) off torch, though the harness's tolerance may agree;
# steps_off: a random input, the golden's and the candidate's elements off the reference by >= 1 output step.
P=.venv/bin/python
R=tools/redteam_round11/values/run_on.py
S=tools/redteam_round18/steps_off.py
D=tools/redteam_round18
demo() { echo; echo "=== $*" | cut -c1-400; "$@" 2>&1 | cut -c1-600; }
G='torch.Generator().manual_seed(0)'
demo $P $R $D/alibi_attention_f16_slope_f16.json '{"q": torch.ones(1,1,2,64).half(), "k": torch.stack([torch.full((64,),125.0), torch.zeros(64)]).reshape(1,1,2,64).half(), "v": torch.stack([torch.ones(64), torch.zeros(64)]).reshape(1,1,2,64).half(), "slopes": torch.tensor([1000.3])}'
demo $P $R $D/attention_f16_acc_f16_before_normalise.json '{"q": torch.zeros(4,64).half(), "k": torch.zeros(4,64).half(), "v": torch.full((4,64), 30000.0).half()}'
demo $P $R $D/flash_decoding_f16_partial_acc_f16.json '{"q": torch.zeros(1,1,64).half(), "k": torch.zeros(1,1,4,64).half(), "v": torch.full((1,1,4,64), 30000.0).half()}'
demo $P $R $D/fp8_gemm_rowwise_bf16_w_scale_bf16.json '{"a": torch.tensor([[7.0]]).to(torch.float8_e4m3fn), "w": torch.tensor([[1.0]]).to(torch.float8_e4m3fn), "a_scale": torch.tensor([1.0]), "w_scale": torch.tensor([1.0039])}'
demo $P $S $D/fp8_gemm_rowwise_bf16_w_scale_bf16.json "{\"a\": torch.randn(32,64,generator=$G).to(torch.float8_e4m3fn), \"w\": torch.randn(32,64,generator=$G).to(torch.float8_e4m3fn), \"a_scale\": torch.rand(32,generator=$G)*0.45+0.05, \"w_scale\": torch.rand(32,generator=$G)*0.45+0.05}"
demo $P $S $D/geglu_halves_bf16_gelu_rounded_bf16.json "{\"x\": (torch.randn(32,2,64,generator=$G)*3).bfloat16()}"
demo $P $R $D/grouped_gemm_f16_acc_via_bf16.json '{"x": torch.tensor([[1.0]]).half(), "w": torch.tensor([[[1.0009765625]]]).half(), "offs": torch.tensor([1], dtype=torch.int32)}'
demo $P $S $D/grouped_gemm_f16_acc_via_bf16.json "{\"x\": torch.randn(64,32,generator=$G).half(), \"w\": torch.randn(2,32,32,generator=$G).half(), \"offs\": torch.tensor([20, 64], dtype=torch.int32)}"
demo $P $R $D/int4_gemm_grouped_f16_dequant_weight_f16.json '{"x": torch.zeros(1,2,128).index_put_((torch.tensor([0,0]), torch.tensor([0,1]), torch.tensor([0,0])), torch.tensor([1000.0, -1000.0])).half(), "qweight": torch.full((1,2,16), -2004318072, dtype=torch.int32).index_put_((torch.tensor([0,0]), torch.tensor([0,1]), torch.tensor([0,0])), torch.tensor([-2004318065, -2004318065], dtype=torch.int32)), "scales": torch.tensor([[1.0009765625, 1.0]]).half()}'
demo $P $S $D/int8_gemm_rowcol_scaled_scales_f16.json "{\"a_q\": torch.randint(-2**31, 2**31-1, (16,32), generator=$G, dtype=torch.int32), \"w_q\": torch.randint(-2**31, 2**31-1, (16,32), generator=$G, dtype=torch.int32), \"a_scale\": torch.rand(16,generator=$G)*0.019+0.001, \"w_scale\": torch.rand(16,generator=$G)*0.019+0.001}"
demo $P $R $D/layer_norm_optional_rstd_in_T.json '{"x": torch.tensor([[300.0, -300.0]]).half(), "weight": torch.ones(2).half(), "bias": torch.tensor([-1.0, 1.0]).half(), "eps": 1e-5}' 3
demo $P $R $D/linear_bias_gelu_f16_h_rounded_f16.json '{"x": torch.tensor([[-3.0]]).half(), "weight": torch.tensor([[1.0]]).half(), "bias": torch.tensor([-0.0009]).half()}'
demo $P $S $D/linear_bias_gelu_f16_h_rounded_f16.json "{\"x\": torch.randn(32,64,generator=$G).half(), \"weight\": (torch.randn(32,64,generator=$G)/8).half(), \"bias\": torch.randn(32,generator=$G).half()}"
demo $P $R $D/paged_attention_decode_f16_p_f16.json '{"q": torch.zeros(1,1,64).index_fill_(2, torch.tensor([0]), 1.0).half(), "k_cache": torch.zeros(1,16,1,64).index_put_((torch.tensor([0]), torch.tensor([1]), torch.tensor([0]), torch.tensor([0])), torch.tensor([-0.008])).half(), "v_cache": torch.cat([torch.full((1,1,1,64), 1000.0), torch.full((1,1,1,64), -1000.0), torch.zeros(1,14,1,64)], 1).half(), "block_table": torch.zeros(1,1, dtype=torch.int32), "seq_lens": torch.tensor([2], dtype=torch.int32)}'
demo $P $S $D/rms_norm_batched_inv_rms_in_T.json "{\"x\": torch.randn(2,8,64,generator=$G).bfloat16(), \"weight\": torch.randn(64,generator=$G).bfloat16(), \"eps\": 1e-5}" 1
demo $P $S $D/row_mean_bf16_sum_bf16_before_divide.json "{\"x\": torch.randn(64,100,generator=$G).bfloat16()}"
demo $P $S $D/softmax_f16_exp_f16_before_scale.json "{\"x\": (torch.randn(32,64,generator=$G)*4).half()}"
demo $P $S $D/softmax_backward_recompute_bf16_probabilities_bf16.json "{\"x\": (torch.randn(32,64,generator=$G)*3).bfloat16(), \"dy\": torch.randn(32,64,generator=$G).bfloat16()}"
