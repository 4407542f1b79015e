#version 450
// The GPU plan's region clears' fragment shader (fdm_clear.vert): COUNT
// colour outputs (the subpass's colour attachments), each the clear colour
// of its slot (a float format's: an integer attachment keeps the clears
// under predicates); the pipeline's write masks keep the slots that load.
layout(location = 0) flat in vec4 colours[8];
#if COUNT > 0
layout(location = 0) out vec4 out0;
#endif
#if COUNT > 1
layout(location = 1) out vec4 out1;
#endif
#if COUNT > 2
layout(location = 2) out vec4 out2;
#endif
#if COUNT > 3
layout(location = 3) out vec4 out3;
#endif
#if COUNT > 4
layout(location = 4) out vec4 out4;
#endif
#if COUNT > 5
layout(location = 5) out vec4 out5;
#endif
#if COUNT > 6
layout(location = 6) out vec4 out6;
#endif
#if COUNT > 7
layout(location = 7) out vec4 out7;
#endif

void main() {
#if COUNT > 0
    out0 = colours[0];
#endif
#if COUNT > 1
    out1 = colours[1];
#endif
#if COUNT > 2
    out2 = colours[2];
#endif
#if COUNT > 3
    out3 = colours[3];
#endif
#if COUNT > 4
    out4 = colours[4];
#endif
#if COUNT > 5
    out5 = colours[5];
#endif
#if COUNT > 6
    out6 = colours[6];
#endif
#if COUNT > 7
    out7 = colours[7];
#endif
}
