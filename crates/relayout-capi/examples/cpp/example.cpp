// The C API from C++ through the RAII wrappers of relayout.hpp: PyTorch's pixel_shuffle(2)
// (ONNX DepthToSpace in CRD mode), run on four threads that share one kernel, and an invalid
// op caught as an exception.
#include "relayout.hpp"

#include <cstdio>
#include <thread>

int main() {
    relayout::Kernel shuffle(
        "DepthToSpace {block_size = 2, data_format = \"NCHW\", mode = \"CRD\"} : tensor<1x8x2x3xf32>");
    std::vector<float> src(48);
    for (size_t i = 0; i < src.size(); i++) src[i] = float(i);

    std::vector<float> dst = shuffle.run(src);
    // Row 0 of output channel 0 interleaves row 0 of input channels 0 and 1.
    const float row0[6] = {0, 6, 1, 7, 2, 8};
    bool ok = std::equal(row0, row0 + 6, dst.begin());

    // One kernel, four threads, each with its own output.
    std::vector<std::thread> threads;
    std::vector<std::vector<float>> outs(4);
    for (size_t t = 0; t < 4; t++)
        threads.emplace_back([&, t] { outs[t] = shuffle.run(src); });
    for (auto &t : threads) t.join();
    for (auto &o : outs) ok = ok && o == dst;

    auto shape = shuffle.output_shape();
    std::printf("pixel_shuffle: %s, output %lldx%lldx%lldx%lld\n", ok ? "ok" : "WRONG",
                (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3]);
    std::printf("%s", shuffle.ir("loops").c_str());

    try {
        relayout::Kernel bad("SpaceToDepth {block_size = 2} : tensor<1x5x4x1xf32>");
    } catch (const relayout::Error &e) {
        std::printf("refused [%s]: %s\n", e.category().c_str(), e.what());
    }
    return ok ? 0 : 1;
}
