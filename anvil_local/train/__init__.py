"""Teaching the judge: training data from pinned public sources, rendered as the metric's own
question (`anvil train data`), and a LoRA adapter for the judge trained on it on the CPU
(`anvil train lora`), converted to a GGUF adapter llama.cpp loads beside its base model.

The data and rendering steps need only the core install; training needs the `train` extra
(torch, transformers, peft, gguf).
"""
