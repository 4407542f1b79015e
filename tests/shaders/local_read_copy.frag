#version 450
// Copies colour attachment 0 of the same dynamic rendering, read through
// VK_KHR_dynamic_rendering_local_read (input attachment index 0 is colour
// attachment 0 by default), into colour attachment 1.
layout(input_attachment_index = 0, set = 0, binding = 0) uniform subpassInput first;
layout(location = 1) out vec4 copy;
void main() {
    copy = subpassLoad(first);
}
