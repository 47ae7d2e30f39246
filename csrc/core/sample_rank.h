/* sample_rank.h - how many axes a sample may have (the batch axis not counted): the bound of every per-sample
 * shape array (model.h) and of the configurations that hold one entry per axis (layer_config.h). */
#ifndef BF_SAMPLE_RANK_H
#define BF_SAMPLE_RANK_H

/* axes of a sample a tensor may have (boundfit._core.MAX_RANK): a video's (T, H, W, C) and more; a kind takes
 * samples of up to BF_BASE_RANK axes unless it is rank-generic (BF_LF_ANY_RANK, layer_registry.h), and a kind
 * that needs fewer refuses more by name in its infer */
#define BF_MAX_RANK 5
#define BF_BASE_RANK 3

#endif
