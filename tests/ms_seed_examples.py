"""The docstring examples of MindSpore's ``Profiler`` class, as the seed document shows them.

Seed: ``../shared/seeds/004_8138ca28afa8a409.txt`` (MindSpore's ``mindspore.profiler.Profiler`` source, 2.5
era). The seed lost its indentation; these are its lines with Python's indentation restored and the ``>>> ``
/ ``... `` prompts removed, nothing else (``tests/integrations/mindspore/test_ms_profiler_examples.py`` checks that line by line
against the seed when it is present). The tests run them with only the import line changed
(:func:`as_npuprof`).
"""
from __future__ import annotations

MINDSPORE_IMPORT = "from mindspore import Profiler"
NPUPROF_IMPORT = "from npuprof.integrations.mindspore import Profiler"

CLASS_EXAMPLE = '''\
import numpy as np
import mindspore as ms
from mindspore import nn
import mindspore.dataset as ds
from mindspore import Profiler
from mindspore.profiler import ProfilerLevel, ProfilerActivity, AicoreMetrics

class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.fc = nn.Dense(2,2)
    def construct(self, x):
        return self.fc(x)

def generator():
    for i in range(2):
        yield (np.ones([2, 2]).astype(np.float32), np.ones([2]).astype(np.int32))

def train(net):
    optimizer = nn.Momentum(net.trainable_params(), 1, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    data = ds.GeneratorDataset(generator, ["data", "label"])
    model = ms.train.Model(net, loss, optimizer)
    model.train(1, data)

if __name__ == '__main__':
    # If the device_target is GPU, set the device_target to "GPU"
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")

    # Init Profiler
    # Note that the Profiler should be initialized before model.train
    profiler = Profiler(profiler_level=ProfilerLevel.Level0,
                        activities=[ProfilerActivity.CPU, ProfilerActivity.NPU],
                        aicore_metrics=AicoreMetrics.AiCoreNone)

    # Train Model
    net = Net()
    train(net)

    # Profiler end
    profiler.analyse()
'''

START_EXAMPLE = '''\
from mindspore.train import Callback
from mindspore import Profiler
class StopAtStep(Callback):
    def __init__(self, start_step, stop_step):
        super(StopAtStep, self).__init__()
        self.start_step = start_step
        self.stop_step = stop_step
        self.profiler = Profiler(start_profile=False)

    def step_begin(self, run_context):
        cb_params = run_context.original_args()
        step_num = cb_params.cur_step_num
        if step_num == self.start_step:
            self.profiler.start()

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        step_num = cb_params.cur_step_num
        if step_num == self.stop_step:
            self.profiler.stop()

    def end(self, run_context):
        self.profiler.analyse()
'''

STOP_EXAMPLE = '''\
from mindspore.train import Callback
from mindspore import Profiler
class StopAtEpoch(Callback):
    def __init__(self, start_epoch, stop_epoch):
        super(StopAtEpoch, self).__init__()
        self.start_epoch = start_epoch
        self.stop_epoch = stop_epoch
        self.profiler = Profiler(start_profile=False)

    def epoch_begin(self, run_context):
        cb_params = run_context.original_args()
        epoch_num = cb_params.cur_epoch_num
        if epoch_num == self.start_epoch:
            self.profiler.start()

    def epoch_end(self, run_context):
        cb_params = run_context.original_args()
        epoch_num = cb_params.cur_epoch_num
        if epoch_num == self.stop_epoch:
            self.profiler.stop()

    def end(self, run_context):
        self.profiler.analyse()
'''

ANALYSE_EXAMPLE = '''\
from mindspore.train import Callback
from mindspore import Profiler
class StopAtStep(Callback):
    def __init__(self, start_step=1, stop_step=5):
        super(StopAtStep, self).__init__()
        self.start_step = start_step
        self.stop_step = stop_step
        self.profiler = Profiler(start_profile=False)

    def step_begin(self, run_context):
        cb_params = run_context.original_args()
        step_num = cb_params.cur_step_num
        if step_num == self.start_step:
            self.profiler.start()

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        step_num = cb_params.cur_step_num
        if step_num == self.stop_step:
            self.profiler.stop()

    def end(self, run_context):
        self.profiler.analyse(step_list=[2,3,4], mode="sync")
'''

OFFLINE_ANALYSE_EXAMPLE = '''\
from mindspore import Profiler
Profiler.offline_analyse("./profiling_path")
'''

# docstring owner in the seed -> example
SEED_EXAMPLES = {"class": CLASS_EXAMPLE, "start": START_EXAMPLE, "stop": STOP_EXAMPLE, "analyse": ANALYSE_EXAMPLE,
                 "offline_analyse": OFFLINE_ANALYSE_EXAMPLE}


def as_npuprof(example: str) -> str:
    """The example with its one import of MindSpore's Profiler made npuprof's."""
    assert example.count(MINDSPORE_IMPORT + "\n") == 1, "the example imports MindSpore's Profiler once"
    return example.replace(MINDSPORE_IMPORT + "\n", NPUPROF_IMPORT + "\n")


def seed_example_lines(seed_text: str) -> list[list[str]]:
    """Each ``Examples:`` block of the seed as its code lines, prompts and whitespace stripped, empty lines dropped."""
    blocks: list[list[str]] = []
    current: list[str] = []
    inside = False
    for raw in seed_text.splitlines():
        line = raw.strip()
        if line == "Examples:":
            inside, current = True, []
            blocks.append(current)
            continue
        if inside and (line.startswith(">>>") or line.startswith("...")):
            code = line[3:].strip()
            if code:
                current.append(code)
        elif inside and line:
            inside = False
    return blocks


def code_lines(example: str) -> list[str]:
    """The example's lines as :func:`seed_example_lines` gives the seed's (comment lines kept)."""
    return [line.strip() for line in example.splitlines() if line.strip()]
