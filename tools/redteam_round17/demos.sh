#!/bin/bash
# Each wrong kernel of round 17 on the input its `why` gives (the FALSE PASS first): run from the repository root.
R=tools/redteam_round17
RO=tools/redteam_round11/values/run_on.py
PY=.venv/bin/python
H=torch.float16
BF=torch.bfloat16
run() { echo "== $1"; $PY $RO $R/$1.json "$2" 2>&1 | grep -v "^Traceback\|^  " | cut -c1-400; }
run moe_top2_routing_other_minus_1e4 "{'logits': torch.tensor([[-20000.0, -20000.0]])}"
run attention_f16_running_max_init_minus_1e4 "{'q': torch.ones(1,64,dtype=$H), 'k': torch.full((1,64),-1024.0,dtype=$H), 'v': torch.ones(1,64,dtype=$H)}"
run attention_causal_mha_f16_causal_mask_minus_1e4 "{'q': torch.ones(1,1,2,64,dtype=$H), 'k': torch.full((1,1,2,64),-256.0,dtype=$H), 'v': torch.stack([torch.zeros(64), torch.ones(64)]).reshape(1,1,2,64).to($H)}"
run cross_attention_bf16_tail_mask_minus_1e5 "{'q': torch.full((1,1,1,64),16.0,dtype=$BF), 'k': torch.full((1,1,1,64),-128.0,dtype=$BF), 'v': torch.ones(1,1,1,64,dtype=$BF)}"
run alibi_attention_f16_mask_minus_65504 "{'q': torch.full((1,1,1,64),4.0,dtype=$H), 'k': torch.full((1,1,1,64),-2048.0,dtype=$H), 'v': torch.ones(1,1,1,64,dtype=$H), 'slopes': torch.tensor([0.5])}"
run flash_decoding_f16_lane_max_init_minus_1e4 "{'q': torch.ones(1,1,64,dtype=$H), 'k': torch.full((1,1,1,64),-1024.0,dtype=$H), 'v': torch.ones(1,1,1,64,dtype=$H)}"
run flash_decoding_f16_combine_floor_minus_1e4 "{'q': torch.ones(1,1,64,dtype=$H), 'k': torch.full((1,1,1,64),-1024.0,dtype=$H), 'v': torch.ones(1,1,1,64,dtype=$H)}"
run sliding_window_attention_f16_mask_minus_1e4 "{'q': torch.ones(1,1,1,64,dtype=$H), 'k': torch.full((1,1,1,64),-2048.0,dtype=$H), 'v': torch.ones(1,1,1,64,dtype=$H), 'window': 1}"
run paged_attention_decode_f16_mask_minus_65504 "{'q': torch.full((1,1,64),4.0,dtype=$H), 'k_cache': torch.full((1,16,1,64),-2048.0,dtype=$H), 'v_cache': torch.ones(1,16,1,64,dtype=$H), 'block_table': torch.zeros(1,1,dtype=torch.int32), 'seq_lens': torch.ones(1,dtype=torch.int32)}"
run softmax_f16_row_max_init_minus_1e4 "{'x': torch.tensor([[-16384.0, -16384.0]],dtype=$H)}"
run softmax_f16_pad_zero_in_max "{'x': torch.tensor([[-200.0, -200.0]],dtype=$H)}"
run softmax_temperature_max_first_element "{'x': torch.tensor([[0.0, 100.0]]), 'temperature': 1.0}"
run softmax_cols_global_max_init_minus_1e5 "{'x': torch.tensor([[-131072.0], [-131072.0]])}"
run masked_softmax_fill_minus_1e4 "{'x': torch.tensor([[-20000.0, -20000.0]]), 'mask': torch.tensor([[True, False]])}"
run log_softmax_rows_other_minus_1e5 "{'x': torch.tensor([[-131072.0, -131072.0]])}"
run softmax_entropy_row_max_init_minus_30000 "{'x': torch.tensor([[-65536.0, -65536.0]])}"
run cross_entropy_row_max_init_minus_1e4 "{'logits': torch.tensor([[-20000.0, -20000.0]]), 'target': torch.tensor([0])}"
run cross_entropy_label_smoothing_row_max_init_zero "{'logits': torch.tensor([[-200.0, -200.0]]), 'target': torch.tensor([0],dtype=torch.int32), 'smoothing': 0.1}"
run log_softmax_nll_lane_max_init_minus_1e4 "{'logits': torch.tensor([[-20000.0, -20000.0]]), 'target': torch.tensor([0])}"
run cross_entropy_backward_row_max_init_minus_65504 "{'logits': torch.tensor([[-131072.0, -131072.0]]), 'target': torch.tensor([0]), 'grad_loss': 1.0, 'label_smoothing': 0.0}"
run distill_kl_teacher_max_init_minus_1e4 "{'teacher': torch.tensor([[-20000.0, -20000.0]]), 'student': torch.tensor([[0.0, 0.0]]), 'T': 1.0}"
run row_range_min_init_plus_65504 "{'x': torch.tensor([[70000.0, 70000.0]])}"
