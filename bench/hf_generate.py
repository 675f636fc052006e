# HF transformers `generate` (bf16, greedy) on the same checkpoint and prompts as bench/gpu.ts:
# the article's prompts and the random workload at batch 1, 8, 32, 128, 256 (static batches, left
# padding). Usage: python3 bench/hf_generate.py hf_input.json hf.json [new_tokens]
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM

inp = json.load(open(sys.argv[1]))
out_path = sys.argv[2]
new = int(sys.argv[3]) if len(sys.argv) > 3 else 256
model = AutoModelForCausalLM.from_pretrained(inp["dir"], dtype=torch.bfloat16).cuda().eval()
dev = torch.device("cuda")


def batch(prompts):
    n = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), n), dtype=torch.long)
    mask = torch.zeros((len(prompts), n), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, n - len(p):] = torch.tensor(p)
        mask[i, n - len(p):] = 1
    return ids.to(dev), mask.to(dev)


@torch.inference_mode()
def gen(prompts, max_new):
    ids, mask = batch(prompts)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=1, min_new_tokens=1, do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()
    ttft = time.perf_counter() - t0
    t0 = time.perf_counter()
    o = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, min_new_tokens=max_new, do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    toks = (o.shape[1] - ids.shape[1]) * len(prompts)
    return {"batch": len(prompts), "newTokens": max_new, "seconds": dt, "outputTokS": toks / dt, "ttftMs": ttft * 1000,
            "itlMs": (dt - ttft) * 1000 / max(1, max_new - 1), "peakGpuBytes": torch.cuda.max_memory_allocated()}


gen(inp["article"][:1], 8)  # warm-up
res = {"transformers": __import__("transformers").__version__, "torch": torch.__version__, "runs": []}
r = gen(inp["article"][:1], 64)
r["label"] = "article prompt 0, batch 1 (64 new tokens)"
res["runs"].append(r)
print(r, flush=True)
r = gen(inp["article"], new)
r["label"] = f"article, all 5 batched ({new} new tokens)"
res["runs"].append(r)
print(r, flush=True)
for c in [8, 32, 128, 256]:
    r = gen(inp["random"][:c], new)
    r["label"] = f"random workload, batch {c} ({new} new tokens)"
    res["runs"].append(r)
    print(r, flush=True)
json.dump(res, open(out_path, "w"), indent=2)
