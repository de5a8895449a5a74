/* config_registry.c: every module's configuration section, in the reference's order. */
#include "train/config_registry.h"

#include "core/config.h"
#include "data/cls/clsdata.h"
#include "data/lm/lmdata.h"
#include "nn/cls_head.h"
#include "nn/mixers/cross.h"
#include "nn/mixers/mixer.h"
#include "model/model.h"
#include "nn/model_cfg.h"
#include "nn/pool.h"
#include "nn/recipe.h"
#include "nn/stem.h"
#include "optim/optim.h"
#include "train/cls_task.h"
#include "train/run_cfg.h"

#define MAX_SECTIONS 48

void config_register_all(void) {
    static const CfgSection *sections[MAX_SECTIONS];
    static CfgRegistry reg;
    static CfgChoiceList lists[1];
    if (!reg.sections) {
        int n = 0;
        sections[n++] = &run_top_cfg_section;
        sections[n++] = &model_cfg_section;
        sections[n++] = &model_keys_section;
        sections[n++] = &model_recipe_section;
        sections[n++] = &pool_cfg_section;
        sections[n++] = &stem_cfg_section;
        sections[n++] = &cls_head_cfg_section;
        n += mixer_config_sections(sections + n, MAX_SECTIONS - 12 - n);
        sections[n++] = &cross_cfg_section;
        sections[n++] = &run_train_cfg_section;
        sections[n++] = &run_keys_cfg_section;
        sections[n++] = &optim_cfg_section;
        n += lmdata_config_sections(sections + n, MAX_SECTIONS - 2 - n);
        sections[n++] = &clstask_cfg_section;
        sections[n++] = &clsdata_cfg_section;
        lists[0] = mixer_choice_list();
        reg = (CfgRegistry){.lists = lists, .n_lists = 1, .sections = sections, .n_sections = n};
    }
    cfg_register(&reg);
}
